# EmpaLink Edge — the two commands an operator needs are `make demo` and `make test`.
# Both install what is missing first (`make deps`): Debian packages through apt, Python test tools into .venv.

SHELL        := /bin/bash
SWIFT        ?= swift
CONFIG       ?= debug
SWIFT_FLAGS  ?= -c $(CONFIG)
VENV         := .venv
PY           := $(VENV)/bin/python
# devicely (the E4 export reader of the record test) pins pandas < 2: a venv of its own.
DEVICELY_VENV := .venv-devicely
BIN          := $(shell pwd)/.build/$(CONFIG)

# Everything the build, the tests and the demo need from Debian.
APT_PACKAGES := pkg-config libdbus-1-dev libmosquitto-dev libsystemd-dev libssl-dev zlib1g-dev \
                dbus mosquitto mosquitto-clients openssl python3-venv tmux
# What `make deb` adds (packaging and its checks); kept out of APT_PACKAGES so `make test` stays lean.
DEB_BUILD_PACKAGES := dpkg-dev binutils chrpath
DEB_PACKAGES := $(DEB_BUILD_PACKAGES) lintian python3-seccomp

.PHONY: all deps apt-deps build test test-swift test-integration faults test-fleet test-bluez test-system demo bench bench-daemon \
        bench-ibi docs clean alloc-check

all: build

## deps: install missing apt packages (idempotent) and the Python test venvs.
deps: apt-deps $(VENV)/.installed $(DEVICELY_VENV)/.installed

apt-deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Debian's python3 (not whatever python3 is first on PATH) owns python3-venv.
$(VENV)/.installed: Tests/requirements.txt | apt-deps
	@test -x $(PY) || /usr/bin/python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r Tests/requirements.txt
	@touch $@

$(DEVICELY_VENV)/.installed: Tests/requirements-devicely.txt | apt-deps
	@test -x $(DEVICELY_VENV)/bin/python || /usr/bin/python3 -m venv $(DEVICELY_VENV)
	$(DEVICELY_VENV)/bin/python -m pip install -q --disable-pip-version-check -r Tests/requirements-devicely.txt
	@touch $@

## build: compile every target.
build: apt-deps
	$(SWIFT) build $(SWIFT_FLAGS)

## test: every unit test (swift test) and every integration test (pytest, real processes), then both VM tests.
# test-bluez and test-system run one after the other, not in parallel: each VM (TCG) takes both cores, and two at
# once on a 2-core host is the load under which the kernel loses btvirt's controller setup (vm/FINDINGS.md S6).
# test-system reuses test-bluez's release binaries and its VM cache (kernel, initramfs, rootfs).
# test-fuzz: every fuzz target for FUZZ_CI_SECONDS (the sanitized build is its own, in .build/fuzz).
test: deps build test-swift test-integration faults test-fleet test-fuzz test-bluez test-system

test-swift:
	$(SWIFT) test $(SWIFT_FLAGS)

test-integration:
	EMPALINK_BIN=$(BIN) EMPALINK_DEVICELY_PYTHON=$(shell pwd)/$(DEVICELY_VENV)/bin/python $(PY) -m pytest -q Tests/integration --ignore=Tests/integration/faults

## faults: the fault tests of issue 7 (broker outage, kill -9, damaged spool, full disk), real processes.
faults: deps build
	EMPALINK_BIN=$(BIN) $(PY) -m pytest -q Tests/integration/faults

## test-fleet: issue #22 — three agents in fleet mode, each on its own bus of one ward simulator, one mosquitto,
## six wristbands on scripted routes, a board kill -9 (+ its radio off), a broker restart, boards started at one
## instant; checks from the simulator's truth and a consumer, figures printed (Docs/fleet.md, "make test-fleet").
## EMPALINK_FLEET=off runs the same ward with fleet mode off: it must fail.
test-fleet: deps build
	@rm -f .build/fleet-figures.txt
	EMPALINK_BIN=$(BIN) $(PY) -m pytest -q Tests/fleet; status=$$?; \
	  [ -f .build/fleet-figures.txt ] && cat .build/fleet-figures.txt; exit $$status

## test-bluez: the agent against Debian's real bluetoothd 5.66 in a QEMU VM (issue #10): btvirt's virtual LE radio,
## `empalink-sim --peripheral` on hci1, empalinkd on hci0, mosquitto; checks on the host (Tests/bluez). The VM's
## assets (kernel, debootstrap rootfs, initramfs) are built once into .cache/bluez-vm, concurrently with the static
## release build of the binaries (what a Pi runs: the Swift runtime linked statically, as bench-daemon builds them).
## BLUEZ_VM_PACKAGES are only what this target needs, so they stay out of APT_PACKAGES (qemu alone is ~100 MB).
BLUEZ_VM_PACKAGES := qemu-system-x86 debootstrap busybox-static cpio
# The binaries are linked as the package links them (RELEASE_LDFLAGS, below), so test-bluez, test-system, deb and
# bench-daemon share .build/release without relinking each other.
test-bluez: deps static-libstdc++
	@$(MAKE) --no-print-directory apt-deps APT_PACKAGES="$(APT_PACKAGES) $(BLUEZ_VM_PACKAGES)"
	@mkdir -p .build; \
	bash vm/build-assets.sh > .build/bluez-vm-assets.log 2>&1 & assets=$$!; \
	built=0; \
	for p in empalinkd empalinkctl; do \
	  [ $$built = 0 ] && { $(SWIFT) build -c release --static-swift-stdlib $(RELEASE_LDFLAGS) --product $$p || built=1; }; \
	done; \
	[ $$built = 0 ] && { $(SWIFT) build -c release --static-swift-stdlib --product empalink-sim || built=1; }; \
	wait $$assets || { cat .build/bluez-vm-assets.log; echo "test-bluez: building the VM assets failed"; exit 1; }; \
	exit $$built
	EMPALINK_STATIC_BIN=$(shell pwd)/.build/release $(PY) -m pytest -q Tests/bluez

## test-system: the .deb on a real system (issue 17): the VM of test-bluez boots systemd as PID 1 over its own
## rootfs (vm/build-system-assets.sh; kernel, initramfs and modules shared with test-bluez's cache), installs the
## package built here with apt, and drives the unit with systemctl against Debian's bluetoothd and mosquitto:
## start/READY/STATUS, the sandbox as the process has it, the journal's fields, reload, broker outage and kill -9
## with the spool, the watchdog, stop, the live security score, upgrade and purge. Checks on the host (Tests/system).
test-system: deps static-libstdc++
	@$(MAKE) --no-print-directory apt-deps APT_PACKAGES="$(APT_PACKAGES) $(BLUEZ_VM_PACKAGES) $(DEB_BUILD_PACKAGES)"
	@mkdir -p .build; \
	bash vm/build-system-assets.sh > .build/system-vm-assets.log 2>&1 & assets=$$!; \
	built=0; \
	for p in empalinkd empalinkctl; do \
	  [ $$built = 0 ] && { $(SWIFT) build -c release --static-swift-stdlib $(RELEASE_LDFLAGS) --product $$p || built=1; }; \
	done; \
	[ $$built = 0 ] && { $(SWIFT) build -c release --static-swift-stdlib --product empalink-sim || built=1; }; \
	[ $$built = 0 ] && { bash deploy/build-deb.sh .build/release $(DEB_DIR) > .build/system-vm-deb.txt || built=1; }; \
	wait $$assets || { cat .build/system-vm-assets.log; echo "test-system: building the VM assets failed"; exit 1; }; \
	exit $$built
	EMPALINK_STATIC_BIN=$(shell pwd)/.build/release EMPALINK_DEB=$$(tail -1 .build/system-vm-deb.txt) \
	  $(PY) -m pytest -q Tests/system

## demo: the shipped demo configuration, shown by `empalinkctl watch` (make demo RAW=1: the raw MQTT traffic).
demo: deps build
	@DEMO_RAW=$(RAW) bash scripts/demo.sh $(BIN)

## bench: in-process benchmarks (release build), then the daemon-level runs (bench-daemon).
# Products are built one by one: a plain `swift build -c release` also builds Tests/Support, which imports
# Testing (not available outside test builds). --static-swift-stdlib everywhere: what a Pi runs, and one set of
# build flags so the two targets never rebuild each other.
bench: apt-deps
	$(SWIFT) build -c release --static-swift-stdlib --product empalink-bench
	.build/release/empalink-bench --json .build/bench.json
	$(MAKE) bench-daemon

## bench-daemon: the release daemon against empalink-sim and mosquitto, 1/5/10/20 wristbands, a background-mode run
## and the bleak + paho peer forwarder (bench/daemon/peer_forwarder.py) on the same load (about 9 minutes).
## BENCH_DAEMON_ARGS="--devices 5 --batch 0 --idle-seconds 0 --rss-files 12" runs one case and shows its memory.
BENCH_DAEMON_ARGS ?=
bench-daemon: deps static-libstdc++
	for product in empalinkd empalinkctl; do \
	  $(SWIFT) build -c release --static-swift-stdlib $(RELEASE_LDFLAGS) --product $$product || exit 1; \
	done
	$(SWIFT) build -c release --static-swift-stdlib --product empalink-sim
	$(PY) bench/daemon/run.py --bin .build/release --json .build/bench-daemon.json $(BENCH_DAEMON_ARGS)

# How the release daemon is linked, by bench-daemon and deb alike: libstdc++ statically, so only the parts the
# Swift runtime uses are in the binary (0.6 MiB less resident memory, Docs/performance.md, RSS). The Swift driver
# passes `-lstdc++` itself; a directory that holds only `libstdc++.a` and is searched first makes the archive win.
STATIC_CXX_DIR := $(CURDIR)/.build/static-libstdc++
DAEMON_LDFLAGS := -Xlinker -L$(STATIC_CXX_DIR)
static-libstdc++:
	@archive=$$(gcc -print-file-name=libstdc++.a); \
	  [ -f "$$archive" ] || { echo "static-libstdc++: no libstdc++.a (gcc -print-file-name: $$archive)" >&2; exit 1; }; \
	  mkdir -p $(STATIC_CXX_DIR) && ln -sf "$$archive" $(STATIC_CXX_DIR)/libstdc++.a

## docs: regenerate Docs/configuration.md from the validator's key table.
docs: build
	$(BIN)/empalinkctl config-reference > Docs/configuration.md

clean:
	rm -rf .build $(VENV)

## bench-ibi: IBI benchmark (our engine vs NeuroKit2 and HeartPy, real E4 recording + synthetic truth).
bench-ibi: deps build
	$(PY) -m pip install -q --disable-pip-version-check -r bench/requirements.txt
	PY=$(PY) bash bench/ibi/run.sh $(BIN)


.PHONY: deb test-deb static-libstdc++ fuzz fuzz-seeds test-fuzz

## fuzz: coverage-guided fuzzing (libFuzzer + AddressSanitizer, Fuzz/README.md): builds empalink-fuzz into
## .build/fuzz, runs every target FUZZ_SECONDS (default 60) one after the other, prints execs, coverage and crashes,
## fails on a crash. FUZZ_TARGETS="config spool" runs some; FUZZ_RUNS=N runs N executions per target instead.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: apt-deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) SWIFT=$(SWIFT) bash scripts/fuzz.sh $(FUZZ_TARGETS)

## test-fuzz: the short fuzz budget `make test` runs (FUZZ_CI_SECONDS per target, default 10).
FUZZ_CI_SECONDS ?= 10
test-fuzz: apt-deps
	FUZZ_SECONDS=$(FUZZ_CI_SECONDS) SWIFT=$(SWIFT) bash scripts/fuzz.sh

## fuzz-seeds: regenerate the synthesized seeds in Fuzz/corpus (real packets, captures, spool segments, D-Bus
## messages, payloads) with the normal build's empalink-fuzz.
fuzz-seeds: apt-deps
	$(SWIFT) build $(SWIFT_FLAGS) --product empalink-fuzz
	$(BIN)/empalink-fuzz seeds Fuzz/corpus

## deb: Debian package (dpkg-deb) for this machine's architecture into build/deb: release build with the Swift
## runtime linked statically, so the package needs only Debian libraries. Reuses .build/release when current.
DEB_DIR      := build/deb
DEB_LDFLAGS  := -Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro
# One set of link flags for the packaged programs wherever .build/release builds them (deb, test-bluez,
# test-system, bench-daemon): full RELRO and immediate binding (hardening; it changes no behaviour) plus the static
# libstdc++. With one set, `make test` links each program once; two sets would relink them at every switch.
RELEASE_LDFLAGS = $(DEB_LDFLAGS) $(DAEMON_LDFLAGS)
deb: static-libstdc++
	@$(MAKE) --no-print-directory apt-deps APT_PACKAGES="$(APT_PACKAGES) $(DEB_PACKAGES)"
	for p in empalinkd empalinkctl; do \
	  $(SWIFT) build -c release --static-swift-stdlib $(RELEASE_LDFLAGS) --product $$p || exit 1; \
	done
	bash deploy/build-deb.sh .build/release $(DEB_DIR)

## test-deb: build the package, then check its layout in a scratch root, lintian, the unit (not part of
## `make test`: it needs the release build).
test-deb: deps deb
	EMPALINK_BIN=$(shell pwd)/.build/release EMPALINK_DEB_DIR=$(DEB_DIR) $(PY) -m pytest -q Tests/integration/test_deploy.py

## alloc-check: allocations per notification in steady state, release build (Docs/performance.md). Exit 1 when a
## case is over budget. EMPALINK_ALLOC_TRACE=all|CASE,... prints where each allocation came from.
alloc-check: apt-deps
	$(SWIFT) build -c release --product empalink-alloc-check
	.build/release/empalink-alloc-check
