#!/usr/bin/env bash
# `make demo`: a private D-Bus bus, empalink-sim with 3 wristbands, mosquitto on a loopback port, empalinkd with
# Config/demo.toml, and the live MQTT traffic. Ctrl-C stops everything this script started (by PID).
set -euo pipefail
bin="$1"
cd "$(dirname "$0")/.."
root="$(pwd)"
work="$root/.build/demo"
mkdir -p "$work"
rm -f "$work/bus" "$work/control.sock"
port=18830
if (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "demo: port $port is in use; stop whatever listens there (or an earlier demo) and retry" >&2
    exit 1
fi

pids=()
cleanup() {
    trap - INT TERM EXIT
    echo
    echo "demo: stopping"
    # Newest first, each one waited for, so the agent says goodbye to a broker that is still there.
    for ((i=${#pids[@]}-1; i>=0; i--)); do
        kill -TERM "${pids[$i]}" 2>/dev/null || true
        wait "${pids[$i]}" 2>/dev/null || true
    done
}
trap cleanup INT TERM EXIT

cat > "$work/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$work/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile 2>/dev/null &
pids+=($!)
for _ in $(seq 50); do [ -S "$work/bus" ] && break; sleep 0.1; done
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/bus"

printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" 2>"$work/mosquitto.log" &
pids+=($!)

"$bin/empalink-sim" --bus "$DBUS_SYSTEM_BUS_ADDRESS" --devices 3 --truth "$work/truth" --log-level warn &
pids+=($!)

rm -f "$work/keyring.toml"
"$bin/empalinkctl" key add --devices '*' --keyring "$work/keyring.toml" > "$work/api-key"

sleep 0.5
echo "demo: in another shell: $bin/empalinkctl status --socket $work/control.sock"
"$bin/empalinkd" --config Config/demo.toml &
pids+=($!)
# The live view of SPEC §17.3 by default; DEMO_RAW=1 (make demo RAW=1) shows the raw MQTT traffic instead.
if [ -n "${DEMO_RAW:-}" ] && [ "${DEMO_RAW}" != 0 ]; then
    echo "demo: live MQTT traffic on 127.0.0.1:$port (topics empalink/demo/#); Ctrl-C stops the demo"
    mosquitto_sub -h 127.0.0.1 -p "$port" -t 'empalink/#' -v &
    pids+=($!)
else
    echo "demo: the ward on 127.0.0.1:$port (empalinkctl watch; make demo RAW=1 for raw MQTT); Ctrl-C stops the demo"
    "$bin/empalinkctl" watch --host 127.0.0.1 --port "$port" &
    pids+=($!)
fi
# DEMO_SECONDS=N ends the demo by itself after N seconds (the test suite uses it).
if [ -n "${DEMO_SECONDS:-}" ]; then
    sleep "$DEMO_SECONDS" &
    pids+=($!)
fi
wait -n "${pids[@]}" || true
