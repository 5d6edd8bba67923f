"""Issue 21: whatever owns `org.bluez` is not trusted (SPEC §12). empalink-sim's `[[hostile]]` switches
(Docs/simulator.md) make seven of nine wristbands' "bluetoothd" break BlueZ's contract at once — wrong types,
malformed signals, an absurd AcquireNotify MTU, a stream socket and a pipe instead of SOCK_SEQPACKET, notifications
of 4000 bytes, a PropertiesChanged flood, a device that vanishes and comes back twice — while wristbands 1 and 2 are
healthy. The real empalinkd must keep running, keep 1 and 2 streaming without a seq gap or a reconnect, count what
it refused (metrics `bluez`, per device `decode_errors`, `notify_fallbacks`), log it in a bounded number of lines,
and stay below ``RSS_BOUND_KIB``.
"""
import time

import pytest

from agent_rig import SCENARIO, Rig, serial, wait_until
from test_hostile_floods import STALL_S, STREAMS, RSSWatch

RSS_BOUND_KIB = 64 * 1024
HOSTILE_SECONDS = 20

HOSTILE = SCENARIO + """
[[hostile]]
device = "3"
wrong_types = true
malformed_signals = 200

[[hostile]]
device = "4"
acquire_notify_mtu = 9223372036854775807

[[hostile]]
device = "5"
notify_socket = "stream"

[[hostile]]
device = "6"
notify_socket = "pipe"

[[hostile]]
device = "7"
oversized_notifications = 4000

[[hostile]]
device = "8"
properties_flood = 2000

[[hostile]]
device = "9"
vanish_s = 2
"""


@pytest.fixture(scope="module")
def run():
    record = {}
    with Rig(devices=9, seed=31, scenario=HOSTILE) as rig:
        config = rig.config_text(list(range(1, 10)), batch_ms=200, metrics_interval_s=1, mqtt_commands=False)
        config = config.replace("reconnect_initial_s = 1", "reconnect_initial_s = 1\nmax_connections = 10")
        rig.start_agent(config)
        watch = RSSWatch(rig.agent.pid)
        assert rig.wait_connected(1) and rig.wait_connected(2), rig.agent_log_text()
        started = time.monotonic()
        alive = []
        while time.monotonic() - started < HOSTILE_SECONDS:
            alive.append(rig.agent.poll() is None)
            time.sleep(0.5)
        record["window"] = (started, time.monotonic())
        record["alive"] = all(alive) and rig.agent.poll() is None
        record["rss_peak"] = watch.close()
        metrics = [m.json for m in rig.subscriber.all(rig.topic("metrics")) if m.json]
        record["metrics"] = metrics[-1] if metrics else None
        record["data"] = {}
        for k in (1, 2):
            out = {}
            for stream in STREAMS:
                for message in rig.subscriber.all(rig.topic(serial(k), stream)):
                    if message.json:
                        out.setdefault((stream, message.json["sid"]), []).append(
                            (message.arrival, message.json["seq"]))
            record["data"][k] = out
        record["status"] = {k: rig.device_status(k) for k in range(1, 10)}
        record["log"] = rig.agent_log_text()
        record["sim_stats"] = rig.sim_stats()
    return record


def test_agent_keeps_running_within_its_memory_bound(run):
    assert run["alive"], run["log"][-3000:]
    assert run["rss_peak"] < RSS_BOUND_KIB, f"agent RSS peaked at {run['rss_peak']} KiB"
    print(f"agent RSS peak under the hostile bluetoothd: {run['rss_peak']} KiB")


def test_healthy_wristbands_stream_without_gaps(run):
    start, end = run["window"]
    for k in (1, 2):
        streams = run["data"][k]
        sids = {sid for (_, sid) in streams}
        assert len(sids) == 1, f"healthy device {k} reconnected: sessions {sids}"
        for (stream, sid), entries in streams.items():
            seqs = sorted(seq for _, seq in entries)
            assert seqs == list(range(len(seqs))), f"device {k} {stream}: seq gap"
        bvp = sorted(t for (stream, _), entries in streams.items() if stream == "bvp" for t, _ in entries
                     if start <= t <= end)
        assert len(bvp) >= 2 * (end - start), f"device {k}: {len(bvp)} BVP messages in {end - start:.0f} s"
        gaps = [b - a for a, b in zip([start] + bvp, bvp + [end])]
        assert max(gaps) < STALL_S, f"device {k}: BVP stalled {max(gaps):.1f} s"


def test_what_the_hostile_bluetoothd_sent_is_refused_and_counted(run):
    metrics = run["metrics"]
    bluez = metrics["bluez"]
    assert bluez["malformed_identifiers"] > 0, bluez  # device 3's Address, UUIDs, AddressType
    assert bluez["malformed_signals"] > 0, bluez  # device 3's signals of the wrong shape
    assert bluez["malformed_replies"] >= 3, bluez  # devices 4, 5 and 6: AcquireNotify
    devices = metrics["devices"]
    # The absurd MTU, the stream socket and the pipe are refused (never read); StopNotify releases what bluetoothd
    # still holds, and the wristband streams through StartNotify instead.
    for k in (4, 5, 6):
        device = devices.get(serial(k))
        assert device and device["notify_fallbacks"] > 0 and device["notify_acquired"] == 0, (k, device)
        assert device["rx_packets"] > 0 and device["status"] == "connected", (k, device)
    # 4000-byte notifications: each one a counted decode error.
    assert devices[serial(7)]["decode_errors"] > 0, devices[serial(7)]
    # The wrong-typed device can never be identified, so it is never connected.
    assert serial(3) not in devices or devices[serial(3)]["status"] != "connected", devices.get(serial(3))


def test_the_journal_gets_a_bounded_number_of_lines(run):
    lines = [line for line in run["log"].splitlines() if "org.bluez sent what BlueZ does not" in line]
    assert lines, run["log"][-3000:]
    # One line per metrics interval (1 s) at most, whatever the rate of malformed input.
    assert len(lines) <= HOSTILE_SECONDS + 5, len(lines)
    total = len(run["log"].splitlines())
    assert total < 2000, f"{total} log lines in {HOSTILE_SECONDS} s of hostile input"
