# EmpaLink Edge — the two commands an operator needs are `make demo` and `make test`.
# Both install what is missing first (`make deps`): Debian packages through apt, Python test tools into .venv.

SHELL        := /bin/bash
SWIFT        ?= swift
CONFIG       ?= debug
SWIFT_FLAGS  ?= -c $(CONFIG)
VENV         := .venv
PY           := $(VENV)/bin/python
BIN          := $(shell pwd)/.build/$(CONFIG)

# Everything the build, the tests and the demo need from Debian.
APT_PACKAGES := pkg-config libdbus-1-dev libmosquitto-dev libsystemd-dev libssl-dev zlib1g-dev \
                dbus mosquitto mosquitto-clients openssl python3-venv

.PHONY: all deps apt-deps build test test-swift test-integration faults demo bench bench-ibi docs clean

all: build

## deps: install missing apt packages (idempotent) and the Python test venv.
deps: apt-deps $(VENV)/.installed

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

## build: compile every target.
build: apt-deps
	$(SWIFT) build $(SWIFT_FLAGS)

## test: every unit test (swift test) and every integration test (pytest, real processes).
test: deps build test-swift test-integration faults

test-swift:
	$(SWIFT) test $(SWIFT_FLAGS)

test-integration:
	EMPALINK_BIN=$(BIN) $(PY) -m pytest -q Tests/integration --ignore=Tests/integration/faults

## faults: the fault tests of issue 7 (broker outage, kill -9, damaged spool, full disk), real processes.
faults: deps build
	EMPALINK_BIN=$(BIN) $(PY) -m pytest -q Tests/integration/faults

## demo: what exists today, on the shipped demo configuration.
demo: deps build
	@bash scripts/demo.sh $(BIN)

## bench: benchmarks, release build.
bench: apt-deps
	$(SWIFT) build -c release
	.build/release/empalink-bench

## docs: regenerate Docs/configuration.md from the validator's key table.
docs: build
	$(BIN)/empalinkctl config-reference > Docs/configuration.md

clean:
	rm -rf .build $(VENV)

## bench-ibi: IBI benchmark (our engine vs NeuroKit2 and HeartPy, real E4 recording + synthetic truth).
bench-ibi: deps build
	$(PY) -m pip install -q --disable-pip-version-check -r bench/requirements.txt
	PY=$(PY) bash bench/ibi/run.sh $(BIN)
