#!/usr/bin/env bash
# `make demo`. The forwarding agent and the wristband simulator are not built yet; until they are, the demo
# validates the demo configuration and shows it fully defaulted, and says so.
set -euo pipefail
bin="$1"
cd "$(dirname "$0")/.."
echo "EmpaLink Edge demo — early build: the simulator and the forwarding agent are not built yet."
echo "Showing what exists: the configuration the demo will run with, validated and fully defaulted."
echo
echo "\$ empalinkd --check-config --config Config/demo.toml --json"
"$bin/empalinkd" --check-config --config Config/demo.toml --json
