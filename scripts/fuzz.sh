#!/usr/bin/env bash
# Coverage-guided fuzzing (issue #21, Fuzz/README.md): builds empalink-fuzz with libFuzzer and AddressSanitizer into
# .build/fuzz (the normal build is untouched), then runs each target for FUZZ_SECONDS (or FUZZ_RUNS executions)
# over its committed seeds (Fuzz/corpus/<target>) plus the corpus it grew before (.build/fuzz/corpus/<target>),
# one after the other. Prints per target the executions, exec/s, coverage (cov: edges, ft: features), corpus and
# crashes; exits 1 when any target crashed (the input is kept as .build/fuzz/artifacts/<target>-crash-*).
#
#   scripts/fuzz.sh [TARGET…]        FUZZ_SECONDS=60 (default), FUZZ_RUNS=N instead of a time budget,
#                                    FUZZ_NICE=10 (niceness), SWIFT=swift
set -u -o pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
RUNS=${FUZZ_RUNS:-}
NICE=${FUZZ_NICE:-10}
BUILD=.build/fuzz
mkdir -p "$BUILD"

start=$(date +%s)
# SwiftPM's --sanitize=fuzzer makes the executable a library for libFuzzer's main, but it passes swiftc
# -sanitize=fuzzer and -sanitize=address as two options, and the last one wins: no module would be instrumented for
# coverage (libFuzzer would run blind, "9 inline 8-bit counters"). -Xswiftc -sanitize=fuzzer,address comes last.
# -enable-testing: the targets reach internal parsers (@testable import).
if ! nice -n "$NICE" "$SWIFT" build -c release --build-path "$BUILD" --sanitize=fuzzer --sanitize=address \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing -Xswiftc -DFUZZING --product empalink-fuzz \
        > "$BUILD/build.log" 2>&1; then
    grep -E 'error|warning: unre' "$BUILD/build.log" | head -40
    echo "fuzz: the sanitized build failed (log: $BUILD/build.log)"
    exit 1
fi
built=$(date +%s)
echo "fuzz: sanitized build $((built - start)) s"
BIN="$BUILD/release/empalink-fuzz"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <("$BIN" list)

budget=(-max_total_time="$SECONDS_PER_TARGET")
[ -n "$RUNS" ] && budget=(-runs="$RUNS")
# Leaks are reported too (ASan's LeakSanitizer, per input); a hang over 10 s or 2 GiB of memory is a finding.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:symbolize=1}
failed=0
printf '%-10s %12s %9s %7s %7s %7s %s\n' target execs exec/s cov ft corpus result
for target in "${targets[@]}"; do
    corpus="$BUILD/corpus/$target"
    mkdir -p "$corpus" "$BUILD/artifacts"
    log="$BUILD/$target.log"
    seeds=()
    [ -d "Fuzz/corpus/$target" ] && seeds=("Fuzz/corpus/$target")
    # The configuration seeds are the shipped files and the TOML conformance cases themselves.
    [ "$target" = config ] && seeds+=(Config Tests/integration/toml/valid Tests/integration/toml/invalid)
    nice -n "$NICE" "$BIN" "$target" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$BUILD/artifacts/$target-" "$corpus" "${seeds[@]}" > "$log" 2>&1
    status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    size=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<< "$last")
    if [ $status -eq 0 ]; then
        result="0 crashes"
    else
        failed=1
        artifact=$(sed -n "s/.*Test unit written to \(.*\)/\1/p" "$log" | tail -1)
        result="CRASH (exit $status) ${artifact:-see $log}"
    fi
    printf '%-10s %12s %9s %7s %7s %7s %s\n' "$target" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" \
        "${size:-?}" "$result"
done
echo "fuzz: $(( $(date +%s) - start )) s in all"
exit $failed
