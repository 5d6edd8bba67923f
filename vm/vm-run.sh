#!/bin/bash
# Runs inside the VM as its first process after the initramfs (switch_root): brings up Debian's Bluetooth stack
# on btvirt's virtual controllers, the E4 peripheral on hci1, a broker, a subscriber and empalinkd on hci0, then
# drops the link and watches the agent reconnect; then (issue 19) a Heart Rate Service strap takes hci1's place and
# a second agent streams its HR and RR through the same bluetoothd. Every milestone is appended to /share/results/milestones as
# "NAME UNIX_TIME"; the first milestone that does not come up in its time is written as "FAILED NAME" with the
# tails of the logs, and the VM powers off either way. The host (Tests/bluez) checks the results.
#
# Inputs on the share: bin/{empalinkd,empalink-sim,empalinkctl}, params (shell variables, optional).
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
S=/share
R=$S/results
mkdir -p "$R"
exec >> "$R/vm-run.log" 2>&1
say() { echo "vm: $*"; echo "vm: $*" > /dev/console; }

# Defaults; the host may override them in $S/params.
STREAM_S=30         # first connection: long enough for IBI (≈ 20 s) and HR
RESTREAM_S=8        # after the reconnect
HRS_STREAM_S=12     # the heart-rate strap phase
SEED=7
# btvirt's controllers report no RSSI (0x7f, "invalid") in LE advertising reports, and the kernel drops every
# report under an RSSI threshold when it has no RSSI; the agent's SetDiscoveryFilter always carries RSSI, so
# alone it never sees the peripheral here. An unfiltered discovery session of another client (bluetoothctl) makes
# bluetoothd merge the filters into an unthresholded scan (src/adapter.c merge_discovery_filters). See FINDINGS.md.
SCAN_HELPER=1
BTMON=0             # 1: record btmon's HCI trace in btmon.log (costs CPU under TCG)
T_CONTROLLERS=25
T_BLUETOOTHD=20
T_PERIPHERAL=30
T_DISCOVERED=60
T_CONNECTED=45
T_NOTIFY=30
T_DISCONNECT=20
T_RECONNECT=60
[ -f "$S/params" ] && . "$S/params"

milestone() {
    echo "$1 $(date +%s.%N)" >> "$R/milestones"
    say "milestone $1 (uptime $(cut -d' ' -f1 /proc/uptime) s)"
}

poweroff_now() {
    sync
    echo o > /proc/sysrq-trigger
    sleep 10
}

tails() {
    for name in dmesg btvirt bluetoothd peripheral empalinkd mosquitto; do
        [ -s "$R/$name.log" ] || continue
        echo "----- tail of $name.log -----"
        tail -n 25 "$R/$name.log"
    done
}

fail() {
    echo "FAILED $1 $(date +%s.%N)" >> "$R/milestones"
    dmesg > "$R/dmesg.log" 2>&1
    # Whether bluetoothd itself survived (5.66 crashes on some client exits: FINDINGS.md).
    if pidof bluetoothd > /dev/null; then echo running; else echo "not running"; fi > "$R/bluetoothd-state"
    say "FAILED: milestone '$1' did not come up: ${2:-}"
    tails > /dev/console
    stop_all
    poweroff_now
}

# wait_for NAME TIMEOUT COMMAND...: polls COMMAND every 0.2 s; the milestone NAME when it succeeds.
wait_for() {
    local name=$1 timeout=$2
    shift 2
    local deadline=$(( $(date +%s) + timeout ))
    until "$@" > /dev/null 2>&1; do
        local watched pid
        for watched in "${watched[@]}"; do
            pid=$(eval echo "\${pid_${watched//-/_}:-}")
            if [ -n "$pid" ] && ! kill -0 "$pid" 2> /dev/null; then
                fail "$name" "$watched exited while waiting for it (see $watched.log)"
            fi
        done
        if [ "$(date +%s)" -ge "$deadline" ]; then
            fail "$name" "no success of '$*' within $timeout s"
        fi
        sleep 0.2
    done
    milestone "$name"
}

pids=()
watched=()  # processes whose exit fails the current milestone at once
spawn() {  # spawn NAME COMMAND...: runs in the background, output to $R/NAME.log
    local name=$1
    shift
    "$@" > "$R/$name.log" 2>&1 &
    eval "pid_${name//-/_}=$!"
    pids+=($!)
    case $name in btvirt|bluetoothd|peripheral|empalinkd|mosquitto|peripheral-hrs|empalinkd-hrs) watched+=("$name") ;; esac
}
stop_all() {
    # The agent first, while the broker is still up (it publishes its offline status and disconnects the
    # wristband), then the peripheral (it flushes its truth), then the subscriber and the broker.
    local group
    for group in "${pid_empalinkd:-} ${pid_empalinkd_hrs:-}" \
                 "${pid_peripheral:-} ${pid_peripheral_hrs:-} ${pid_scan_helper:-} ${pid_scan_helper_hrs:-}" \
                 "${pid_subscriber:-} ${pid_mosquitto:-}"; do
        # shellcheck disable=SC2086 # a group is a list of pids
        stop_pids $group
    done
    sync
}
stop_pids() {  # stop_pids PID...: SIGTERM, then up to 6 s for them to exit
    local pid
    for pid in "$@"; do kill -TERM "$pid" 2> /dev/null; done
    for _ in $(seq 60); do
        local alive=0
        for pid in "$@"; do kill -0 "$pid" 2> /dev/null && alive=1; done
        [ $alive = 0 ] && return
        sleep 0.1
    done
}

bus() { dbus-send --system --print-reply --reply-timeout=5000 --dest=org.bluez "$@"; }
prop() {  # prop PATH INTERFACE NAME: prints the property's reply
    bus "$1" org.freedesktop.DBus.Properties.Get "string:$2" "string:$3"
}
is_true() { prop "$@" 2> /dev/null | grep -q "boolean true"; }

cut -d" " -f1 /proc/uptime > "$R/uptime_at_vm_up"
milestone vm_up
uname -r > "$R/kernel"

ip link set lo up || fail loopback "ip link set lo up failed"
modprobe -a hci_vhci af_alg algif_hash algif_skcipher cmac ecb || fail modules "modprobe failed"
mkdir -p /run/dbus /var/lib/bluetooth /tmp
dbus-daemon --system --fork --nopidfile || fail dbus "dbus-daemon --system failed"

spawn btvirt btvirt -L -l2
wait_for controllers_present "$T_CONTROLLERS" test -e /sys/class/bluetooth/hci0 -a -e /sys/class/bluetooth/hci1

spawn dbus-monitor dbus-monitor --system \
    "type='method_call',interface='org.bluez.GattCharacteristic1'" \
    "type='method_call',interface='org.bluez.Device1'" \
    "type='method_call',interface='org.bluez.Adapter1'" \
    "type='error'" "type='method_return'" \
    "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties'" \
    "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.ObjectManager'"
spawn bluetoothd /usr/libexec/bluetooth/bluetoothd -n -d
wait_for bluetoothd_up "$T_BLUETOOTHD" bash -c "$(declare -f bus prop); prop /org/bluez/hci0 org.bluez.Adapter1 Address && \
    prop /org/bluez/hci1 org.bluez.Adapter1 Address"
for hci in hci0 hci1; do
    bus /org/bluez/$hci org.freedesktop.DBus.Properties.Set string:org.bluez.Adapter1 string:Powered \
        variant:boolean:true > /dev/null 2>&1
done
wait_for controllers_up "$T_CONTROLLERS" \
    bash -c "$(declare -f bus prop is_true); is_true /org/bluez/hci0 org.bluez.Adapter1 Powered && \
             is_true /org/bluez/hci1 org.bluez.Adapter1 Powered"

address() { prop "/org/bluez/$1" org.bluez.Adapter1 Address | sed -n 's/.*string "\(.*\)"/\1/p'; }
PERIPHERAL=$(address hci1)
CENTRAL=$(address hci0)
SERIAL=$(echo "${PERIPHERAL//:/}" | tail -c 7 | tr 'A-F' 'a-f')
echo "hci0 (central) $CENTRAL, hci1 (peripheral) $PERIPHERAL, serial $SERIAL"
printf 'central %s\nperipheral %s\nserial %s\n' "$CENTRAL" "$PERIPHERAL" "$SERIAL" > "$R/identity"
DEV=/org/bluez/hci0/dev_${PERIPHERAL//:/_}
PEER=/org/bluez/hci1/dev_${CENTRAL//:/_}

[ "$BTMON" = 1 ] && spawn btmon btmon -T
# The peripheral: our empalink-sim on hci1 (or, for bring-up, $S/peripheral.sh when the host provides one).
if [ -x "$S/peripheral.sh" ]; then
    spawn peripheral "$S/peripheral.sh" "$R/truth"
else
    spawn peripheral "$S/bin/empalink-sim" --peripheral --adapter hci1 --seed "$SEED" --truth "$R/truth"
fi
wait_for advertising "$T_PERIPHERAL" \
    bash -c "$(declare -f bus prop); prop /org/bluez/hci1 org.bluez.LEAdvertisingManager1 ActiveInstances \
             | grep -q 'byte [1-9]'"

# Broker, subscriber (one line per message: arrival time, topic, payload), agent.
cat > /tmp/mosquitto.conf <<CONF
listener 1883 127.0.0.1
allow_anonymous true
persistence false
CONF
spawn mosquitto mosquitto -c /tmp/mosquitto.conf
wait_for broker_up 15 bash -c "echo > /dev/tcp/127.0.0.1/1883"
spawn subscriber mosquitto_sub -h 127.0.0.1 -p 1883 -V mqttv5 -t 'empalink/#' -F '%U	%r	%t	%p'
mv "$R/subscriber.log" "$R/mqtt.tsv" 2> /dev/null  # the open fd keeps writing to the renamed file

mkdir -p /tmp/agent
"$S/bin/empalinkctl" key add --devices '*' --keyring /tmp/agent/keyring.toml > /tmp/agent/key.out \
    || fail agent_config "empalinkctl key add failed"
head -1 /tmp/agent/key.out > /tmp/agent/api-key
cat > /tmp/agent/empalinkd.toml <<CONF
[agent]
id = "vm"
log_level = "info"
control_socket = "/tmp/agent/control.sock"

[auth]
api_key_file = "/tmp/agent/api-key"
keyring = "/tmp/agent/keyring.toml"

[bluetooth]
adapter = "hci0"
mode = "active"
reconnect_initial_s = 1
# Under TCG a first LE connection through btvirt takes ~10 s (see FINDINGS.md); the default 20 s leaves little room.
connect_timeout_s = 45

[[wristband]]
serial = "$SERIAL"
label = "vm wristband"

[mqtt]
host = "127.0.0.1"
port = 1883
protocol = "5"
qos = 1
topic_prefix = "empalink"

[publish]
batch_ms = 250
metrics_interval_s = 2
# The host compares every decoded sample with the peripheral's truth, exactly: the raw BVP (the filtered default is
# checked against the simulator by test_agent_contract.py).
bvp = "raw"

[spool]
dir = "/tmp/agent/spool"
CONF
cp /tmp/agent/empalinkd.toml "$R/empalinkd.toml"
"$S/bin/empalinkd" --check-config --config /tmp/agent/empalinkd.toml || fail agent_config "--check-config failed"
if [ "$SCAN_HELPER" = 1 ]; then
    # btvirt delivers advertising reports when a scan is enabled, not periodically, and bluetoothd restarts its
    # LE scan only every ~10 s: the helper restarts its session every 3 s until the wristband was discovered.
    spawn scan-helper bash -c "{ echo 'select $CENTRAL'; echo 'scan on';
        while [ ! -e /tmp/discovered ]; do sleep 3; echo 'scan off'; sleep 0.5; echo 'scan on'; done;
        sleep 100000; } | bluetoothctl"
fi
spawn empalinkd "$S/bin/empalinkd" --config /tmp/agent/empalinkd.toml
milestone agent_started

wait_for discovered "$T_DISCOVERED" prop "$DEV" org.bluez.Device1 Address
touch /tmp/discovered
wait_for connected "$T_CONNECTED" is_true "$DEV" org.bluez.Device1 Connected
wait_for services_resolved 30 is_true "$DEV" org.bluez.Device1 ServicesResolved
wait_for first_notification "$T_NOTIFY" grep -q "/$SERIAL/bvp" "$R/mqtt.tsv"
bus / org.freedesktop.DBus.ObjectManager.GetManagedObjects > "$R/objects-connected.txt" 2>&1
probe_start=$(date +%s)

# Misuse probes from a second client while the agent streams, for the simulator's error names (FINDINGS.md).
# None of them disturbs the agent's link or its acquired notification fds.
char_path() {  # char_path UUID16: the device's characteristic with that UUID
    awk -v uuid="0000$1-0000-1000-8000-00805f9b34fb" -v dev="$DEV/" '
        /object path "/ { gsub(/"/, "", $3); path = $3 }
        $0 ~ "string \"" uuid "\"" && index(path, dev) == 1 && path ~ /char[0-9a-f]+$/ { print path; exit }
    ' "$R/objects-connected.txt"
}
probe() {  # probe LABEL PATH METHOD [GVARIANT ARGS...]: one call (gdbus: a{sv} needs it), reply or error
    local label=$1 path=$2 method=$3
    shift 3
    { echo "== $label"; timeout 10 gdbus call --system --dest org.bluez --object-path "$path" --method "$method" \
        "$@" 2>&1 | head -3; } >> "$R/probes.txt"
}
BVP_CHAR=$(char_path 3ea1)
CMD_CHAR=$(char_path 3e71)
BAT_CHAR=$(char_path 3eb3)
CH=org.bluez.GattCharacteristic1
probe "AcquireNotify on BVP (acquired by the agent)" "$BVP_CHAR" $CH.AcquireNotify "@a{sv} {}"
probe "StartNotify on BVP (acquired by the agent)" "$BVP_CHAR" $CH.StartNotify
probe "ReadValue on BVP (notify only)" "$BVP_CHAR" $CH.ReadValue "@a{sv} {}"
probe "ReadValue on battery" "$BAT_CHAR" $CH.ReadValue "@a{sv} {}"
probe "WriteValue on battery (not writable)" "$BAT_CHAR" $CH.WriteValue "[byte 1]" "@a{sv} {}"
probe "WriteValue of 1 byte on the command" "$CMD_CHAR" $CH.WriteValue "[byte 1]" "@a{sv} {}"
probe "WriteValue of opcode 0x7f on the command" "$CMD_CHAR" $CH.WriteValue "[byte 0x7f, 0, 0, 0, 0]" "@a{sv} {}"
probe "AcquireNotify on the command (not notifiable)" "$CMD_CHAR" $CH.AcquireNotify "@a{sv} {}"
probe "AcquireNotify with mtu option" "$BAT_CHAR" $CH.AcquireNotify "{'mtu': <uint16 23>}"
probe "Connect on the connected device" "$DEV" org.bluez.Device1.Connect
probe "StopDiscovery without a session" /org/bluez/hci0 org.bluez.Adapter1.StopDiscovery
probe "SetDiscoveryFilter with an unknown key" /org/bluez/hci0 org.bluez.Adapter1.SetDiscoveryFilter "{'Foo': <'bar'>}"
probe "SetDiscoveryFilter Transport=bogus" /org/bluez/hci0 org.bluez.Adapter1.SetDiscoveryFilter \
    "{'Transport': <'bogus'>}"
probe "SetDiscoveryFilter RSSI and Pathloss" /org/bluez/hci0 org.bluez.Adapter1.SetDiscoveryFilter \
    "{'RSSI': <int16 -60>, 'Pathloss': <uint16 10>}"
probe "ConnectProfile" "$DEV" org.bluez.Device1.ConnectProfile "0000180d-0000-1000-8000-00805f9b34fb"
probe "Connect on a device object that does not exist" /org/bluez/hci0/dev_00_11_22_33_44_55 \
    org.bluez.Device1.Connect
sleep $(( STREAM_S - ($(date +%s) - probe_start) > 0 ? STREAM_S - ($(date +%s) - probe_start) : 0 ))
milestone streamed

# The disconnect: the peripheral's side drops the link (Device1.Disconnect on its object for the central).
milestone drop_link
bus "$PEER" org.bluez.Device1.Disconnect > "$R/disconnect.txt" 2>&1 || echo "vm: Disconnect: $(cat "$R/disconnect.txt")"
# Whether the agent published the wristband connected again after it published it disconnected (a connect
# publishes several "connected" statuses, so counting them does not tell the first connect from the second).
connected_after_drop() {
    awk -F'\t' -v topic="/$SERIAL/status" '
        substr($3, length($3) - length(topic) + 1) != topic { next }
        index($4, "{\"status\":\"disconnected\"") == 1 { down = 1 }
        down && index($4, "{\"status\":\"connected\"") == 1 { up = 1 }
        END { exit !up }' "$R/mqtt.tsv"
}

# Down is seen on the central's Connected property, or in the agent's status (which it takes from bluetoothd's
# Connected=false signal): on a loaded host one property poll under TCG can take longer than the agent needs to
# reconnect, and the poll alone then misses a drop that happened.
wait_for disconnected "$T_DISCONNECT" bash -c "grep -q '/$SERIAL/status	{\"status\":\"disconnected\"' $R/mqtt.tsv \
    || ! ( $(declare -f bus prop is_true); is_true $DEV org.bluez.Device1 Connected )"
wait_for reconnected "$T_RECONNECT" is_true "$DEV" org.bluez.Device1 Connected
wait_for restreaming "$T_NOTIFY" connected_after_drop
sleep "$RESTREAM_S"
bus / org.freedesktop.DBus.ObjectManager.GetManagedObjects > "$R/objects-end.txt" 2>&1
milestone restreamed
# Last, because it disturbs the agent: bluetoothd 5.66 lets another client's StopNotify release the agent's
# acquired notifications (FINDINGS.md).
probe "StopNotify on BVP from another client (acquired by the agent)" "$BVP_CHAR" $CH.StopNotify
sleep 1

# Issue 19: a standard Heart Rate Service strap on the same radio. The E4's agent and peripheral stop (their pids are
# forgotten, so their exits fail nothing); bluetoothd forgets the device (its cached E4 GATT tree), and the strap's
# peripheral advertises from hci1 (the same address) for a second agent whose whitelist entry says profile "hrs" and
# id "strap". Its topics are P/vm/strap/...; its truth goes to truth-hrs/.
stop_pids ${pid_empalinkd:-}
pid_empalinkd=""
stop_pids ${pid_peripheral:-}
pid_peripheral=""
wait_for hrs_e4_gone 15 bash -c "$(declare -f bus prop); prop /org/bluez/hci1 org.bluez.LEAdvertisingManager1 \
    ActiveInstances | grep -q 'byte 0'"
bus /org/bluez/hci0 org.bluez.Adapter1.RemoveDevice "objpath:$DEV" > "$R/remove-device.txt" 2>&1
spawn peripheral-hrs "$S/bin/empalink-sim" --peripheral --adapter hci1 --devices 0 --hrs 1 --seed "$SEED" \
    --truth "$R/truth-hrs"
wait_for hrs_advertising "$T_PERIPHERAL" \
    bash -c "$(declare -f bus prop); prop /org/bluez/hci1 org.bluez.LEAdvertisingManager1 ActiveInstances \
             | grep -q 'byte [1-9]'"
sed -e 's/^serial = .*/address = "'"$PERIPHERAL"'"\nprofile = "hrs"\nid = "strap"/' -e 's/vm wristband/vm strap/' \
    -e 's#/tmp/agent/spool#/tmp/agent/spool-hrs#' -e 's#/tmp/agent/control.sock#/tmp/agent/control-hrs.sock#' \
    /tmp/agent/empalinkd.toml > /tmp/agent/empalinkd-hrs.toml
cp /tmp/agent/empalinkd-hrs.toml "$R/empalinkd-hrs.toml"
"$S/bin/empalinkd" --check-config --config /tmp/agent/empalinkd-hrs.toml || fail hrs_config "--check-config failed"
if [ "$SCAN_HELPER" = 1 ]; then
    spawn scan-helper-hrs bash -c "{ echo 'select $CENTRAL'; echo 'scan on';
        while [ ! -e /tmp/discovered-hrs ]; do sleep 3; echo 'scan off'; sleep 0.5; echo 'scan on'; done;
        sleep 100000; } | bluetoothctl"
fi
spawn empalinkd-hrs "$S/bin/empalinkd" --config /tmp/agent/empalinkd-hrs.toml
wait_for hrs_discovered "$T_DISCOVERED" prop "$DEV" org.bluez.Device1 Address
touch /tmp/discovered-hrs
wait_for hrs_connected "$T_CONNECTED" is_true "$DEV" org.bluez.Device1 Connected
wait_for hrs_streaming "$T_NOTIFY" bash -c "grep -q '/strap/ibi	' $R/mqtt.tsv && grep -q '/strap/hr	' $R/mqtt.tsv"
sleep "$HRS_STREAM_S"
milestone hrs_streamed

stop_all
dmesg > "$R/dmesg.log" 2>&1
milestone done
poweroff_now
