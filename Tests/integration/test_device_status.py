"""Issue 23, item 12 (status truth): `P/A/S/status` carries `since` in every status, no stale RSSI while connected,
is not repeated when nothing in it changed, and is republished when a reload changes the label; `empalinkctl mode
active` and `empalinkctl rescan` reach the agent.
"""
import json
import signal
import time

import pytest

from agent_rig import Rig, serial, wait_until


@pytest.fixture(scope="module")
def rig():
    with Rig(devices=1) as rig:
        rig.start_agent(rig.config_text(whitelist=[1]))
        if not rig.wait_connected(1):
            raise RuntimeError(f"wristband 1 did not connect: {rig.agent_log_text()}")
        time.sleep(1.0)  # the first battery reading and any repeats
        yield rig


def statuses(rig):
    return rig.subscriber.all(rig.topic(serial(1), "status"))


def test_every_status_says_since_when_and_none_repeats_unchanged(rig):
    messages = statuses(rig)
    assert [m.json["status"] for m in messages][:2] == ["connecting", "connected"], messages
    for message in messages:
        assert isinstance(message.json["since"], float), f"since is missing: {message}"
        if message.json["status"] == "connected":
            assert message.json["rssi"] is None, f"a stale advertised RSSI while connected: {message}"
    connecting, connected = messages[0].json, messages[1].json
    assert connecting["since"] <= connected["since"]
    payloads = [m.payload for m in messages]
    repeats = [a for a, b in zip(payloads, payloads[1:]) if a == b]
    assert repeats == [], f"published again unchanged: {repeats}"


def test_a_reload_that_changes_the_label_republishes_the_status(rig):
    rig.config_path.write_text(rig.config_path.read_text().replace('label = "bed 1"', 'label = "ward 9"'))
    rig.agent.send_signal(signal.SIGHUP)
    relabelled = wait_until(lambda: (rig.device_status(1) or {}).get("label") == "ward 9", 5)
    assert relabelled, f"the retained status still says {rig.device_status(1)}"
    assert rig.device_status(1)["status"] == "connected"


def test_ctl_mode_active_is_the_modes_name(rig):
    status_topic = rig.topic("status")
    assert rig.ctl("mode", "background", "--socket", str(rig.control_socket)).returncode == 0
    assert rig.subscriber.wait_for(lambda m: m.topic == status_topic and m.json.get("mode") == "background", 5)
    start = time.monotonic()
    result = rig.ctl("mode", "active", "--socket", str(rig.control_socket))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ok"] is True
    assert rig.subscriber.wait_for(
        lambda m: m.topic == status_topic and m.arrival >= start and m.json.get("mode") == "active", 5)


def test_ctl_rescan_reaches_the_agent(rig):
    result = rig.ctl("rescan", "--socket", str(rig.control_socket))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"ok": True, "result": "rescan requested"}


def test_a_wristband_leaving_the_whitelist_says_since_when_it_is_disconnected(rig):
    rig.config_path.write_text(rig.config_text(whitelist=[]))
    start = time.monotonic()
    rig.agent.send_signal(signal.SIGHUP)
    gone = wait_until(lambda: (rig.device_status(1) or {}).get("status") == "disconnected", 10)
    assert gone, rig.device_status(1)
    after = [m.json for m in statuses(rig) if m.arrival >= start]
    assert after and all(isinstance(s["since"], float) for s in after), after
    assert after[-1]["since"] >= after[0]["since"]
