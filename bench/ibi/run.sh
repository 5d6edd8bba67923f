#!/bin/bash
# make bench-ibi: our engine (empalinkctl ibi), NeuroKit2 and HeartPy on the real E4 recordings (e4-msr2023 and every
# e4-stresspredict session) and on synthetic recordings with exact truth, all scored by ../shared/tools/eval_ibi.py;
# prints the tables for Docs/ibi.md.
set -euo pipefail
BIN=${1:-.build/debug}
PY=${PY:-.venv/bin/python}
DATA=${DATA:-../shared/data/e4-msr2023}
EVAL=${EVAL:-../shared/tools/eval_ibi.py}
OUT=${OUT:-.build/bench-ibi}
mkdir -p "$OUT/real" "$OUT/synth"
"$BIN/empalinkctl" ibi --bvp "$DATA/BVP.csv" --acc "$DATA/ACC.csv" --out "$OUT/real/empalink.csv" \
    --beats "$OUT/real/empalink-beats.csv"
"$PY" bench/ibi/peers.py --bvp "$DATA/BVP.csv" --outdir "$OUT/real"
"$PY" "$EVAL" --bvp "$DATA/BVP.csv" --acc "$DATA/ACC.csv" --ref "$DATA/IBI.csv" --hr "$DATA/HR.csv" --tol 0.1 \
    --detections "$OUT/real/empalink.csv" "$OUT/real/neurokit2.csv" "$OUT/real/heartpy.csv" \
    --json "$OUT/real/scores.json" > "$OUT/real/report.txt"
"$PY" bench/ibi/synth.py --outdir "$OUT/synth/data"
for d in "$OUT"/synth/data/*/; do
    name=$(basename "$d")
    mkdir -p "$OUT/synth/$name"
    "$BIN/empalinkctl" ibi --bvp "$d/BVP.csv" --acc "$d/ACC.csv" --beats "$OUT/synth/$name/empalink.csv" >/dev/null
    "$PY" bench/ibi/peers.py --bvp "$d/BVP.csv" --outdir "$OUT/synth/$name"
done
# Every other E4 session with Empatica's own IBI.csv (SETS: folders with BVP.csv, ACC.csv, IBI.csv; default every such
# folder under ../shared/data/e4-stresspredict): the same engine and peers, scored the same way, one table (table.py).
SETS=${SETS:-$(for d in ../shared/data/e4-stresspredict/*/; do [ -f "$d/IBI.csv" ] && echo "${d%/}"; done)}
for d in $SETS; do
    name=$(basename "$d")
    set_out="$OUT/sets/$name"
    mkdir -p "$set_out"
    "$BIN/empalinkctl" ibi --bvp "$d/BVP.csv" --acc "$d/ACC.csv" --out "$set_out/empalink.csv" \
        --beats "$set_out/empalink-beats.csv"
    "$PY" bench/ibi/peers.py --bvp "$d/BVP.csv" --outdir "$set_out"
    "$PY" "$EVAL" --bvp "$d/BVP.csv" --acc "$d/ACC.csv" --ref "$d/IBI.csv" --hr "$d/HR.csv" --tol 0.1 \
        --detections "$set_out/empalink.csv" "$set_out/neurokit2.csv" "$set_out/heartpy.csv" \
        --json "$set_out/scores.json" > "$set_out/report.txt"
    "$PY" bench/ibi/analyse_misses.py --beats "$set_out/empalink-beats.csv" --data "$d" --eval "$EVAL" \
        > "$set_out/misses.txt"
done
"$PY" bench/ibi/table.py --out "$OUT" --eval "$EVAL" --sets "$(for d in $SETS; do basename "$d"; done)"
# Why the reference rows we do not cover are missed (Docs/ibi.md, "What still misses").
"$PY" bench/ibi/analyse_misses.py --beats "$OUT/real/empalink-beats.csv" --data "$DATA" --eval "$EVAL" \
    > "$OUT/real/misses.txt"
# Which of our motion-time emissions Empatica does not have, and what sets them apart (Docs/ibi.md).
"$PY" bench/ibi/analyse_motion.py --beats "$OUT/real/empalink-beats.csv" --data "$DATA" --eval "$EVAL" \
    > "$OUT/real/motion.txt"
# Heart rate on every set, ours next to Empatica's HR.csv and the peers' (Docs/ibi.md, "Heart rate through motion").
mkdir -p "$OUT/hr"
"$PY" bench/ibi/hr.py --bin "$BIN" --out "$OUT" --score "${SCORE_HR:-../shared/tools/score_hr.py}" \
    --data "$(dirname "$DATA")" > "$OUT/hr/table.md"
cat "$OUT/hr/table.md"
# The artefact-reduced BVP against the unfiltered one (Docs/ibi.md, "Artefact-reduced BVP").
"$PY" bench/ibi/filtered.py --bin "$BIN" --out "$OUT" --data "$(dirname "$DATA")" > "$OUT/hr/filtered.md"
cat "$OUT/hr/filtered.md"
# What a recording the engine has never seen may change: the BVP's gain, the band's orientation, the sensor's noise
# (Docs/ibi.md, "What a new recording may change").
"$PY" bench/ibi/invariance.py --bin "$BIN" --out "$OUT" --data "$(dirname "$DATA")" --eval "$EVAL" \
    --score "${SCORE_HR:-../shared/tools/score_hr.py}" > "$OUT/invariance.md"
cat "$OUT/invariance.md"
