"""Issue 6 acceptance, power modes (SPEC §3, §10, §12): SIGUSR1/SIGUSR2, `empalinkctl mode`, and MQTT commands
switch the status topic's `mode` and the batch cadence (bvp every `batch_ms` = 200 ms active, every
`background_batch_ms` = 1000 ms in background); malformed MQTT commands are answered with an error and change nothing.
"""
import json
import signal
import statistics
import time

import pytest

from agent_rig import Rig, serial, wait_until

ACTIVE_S = 1.6
BACKGROUND_S = 3.6
MALFORMED = ["{", '{"mode":"sideways"}', "[1]", '{"mode":"background","x":1}']


class Phases:
    """Runs mode switches against one agent and records, per phase, the status modes published and bvp cadence."""

    def __init__(self, rig):
        self.rig = rig
        self.bvp = rig.topic(serial(1), "bvp")
        self.status = rig.topic("status")
        self.results = []

    def measure(self, name, action, expected_mode, seconds):
        """Runs `action`, waits for a status with `expected_mode` (None: expect no switch), then records the phase."""
        rig = self.rig
        start = time.monotonic()
        outcome = action()
        switched = None
        if expected_mode is not None:
            switched = rig.subscriber.wait_for(
                lambda m: m.topic == self.status and m.arrival >= start and m.json.get("mode") == expected_mode, 5)
        # setMode flushes every batch at the switch; measure the steady cadence after it.
        settle = (switched.arrival if switched else time.monotonic()) + 0.3
        time.sleep(max(0.0, settle + seconds - time.monotonic()))
        end = time.monotonic()
        arrivals = [m.arrival for m in rig.subscriber.all(self.bvp) if settle <= m.arrival <= end]
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
        statuses = [m.json.get("mode") for m in rig.subscriber.all(self.status) if start <= m.arrival <= end]
        self.results.append({"name": name, "outcome": outcome, "switched": switched is not None,
                             "statuses": statuses, "gaps": gaps,
                             "median": statistics.median(gaps) if gaps else None})

    def command(self, payload):
        """Publishes on P/A/cmd and returns the next cmd/result payload (None if none within 5 s)."""
        rig = self.rig
        result_topic = rig.topic("cmd", "result")
        before = len(rig.subscriber.all(result_topic))
        rig.subscriber.publish(rig.topic("cmd"), payload)
        if not wait_until(lambda: len(rig.subscriber.all(result_topic)) > before, 5):
            return None
        return rig.subscriber.all(result_topic)[before].json


@pytest.fixture(scope="module")
def phases():
    with Rig(devices=1) as rig:
        rig.start_agent(rig.config_text([1], batch_ms=200, background_batch_ms=1000))
        if not rig.wait_connected(1, 20):
            pytest.fail(f"wristband 1 did not connect: {rig.agent_log_text()}")
        p = Phases(rig)
        ctl_socket = ["--socket", str(rig.control_socket)]
        p.measure("initial", lambda: None, "active", ACTIVE_S)
        p.measure("SIGUSR1", lambda: rig.agent.send_signal(signal.SIGUSR1), "background", BACKGROUND_S)
        p.measure("SIGUSR2", lambda: rig.agent.send_signal(signal.SIGUSR2), "active", ACTIVE_S)
        p.measure("ctl background", lambda: rig.ctl("mode", "background", *ctl_socket), "background", BACKGROUND_S)
        p.measure("ctl resume", lambda: rig.ctl("mode", "resume", *ctl_socket), "active", ACTIVE_S)
        p.measure("malformed", lambda: [p.command(payload) for payload in MALFORMED], None, ACTIVE_S)
        p.measure("mqtt background", lambda: p.command(json.dumps({"mode": "background"})), "background",
                  BACKGROUND_S)
        p.measure("mqtt resume", lambda: p.command(json.dumps({"mode": "resume"})), "active", ACTIVE_S)
        p.log = rig.agent_log_text()
        yield {r["name"]: r for r in p.results}


SWITCHES = [("SIGUSR1", "background"), ("SIGUSR2", "active"), ("ctl background", "background"),
            ("ctl resume", "active"), ("mqtt background", "background"), ("mqtt resume", "active")]


@pytest.mark.parametrize("name,mode", SWITCHES)
def test_switch_changes_status_mode_and_cadence(phases, name, mode):
    phase = phases[name]
    assert phase["switched"], f"{name}: no status with mode {mode}"
    assert phase["statuses"] == [mode], f"{name}: status modes published {phase['statuses']}"
    expected = 1.0 if mode == "background" else 0.2
    assert phase["median"] is not None and len(phase["gaps"]) >= 2, f"{name}: bvp gaps {phase['gaps']}"
    assert abs(phase["median"] - expected) <= 0.25 * expected, \
        f"{name}: bvp every {phase['median']:.3f} s, expected {expected} s ({phase['gaps']})"


def test_active_cadence_at_start(phases):
    phase = phases["initial"]
    assert phase["median"] is not None and abs(phase["median"] - 0.2) <= 0.05, phase["gaps"]


def test_control_socket_and_mqtt_commands_report_success(phases):
    for name in ("ctl background", "ctl resume"):
        completed = phases[name]["outcome"]
        assert completed.returncode == 0, f"{name}: {completed.stderr}"
    for name in ("mqtt background", "mqtt resume"):
        result = phases[name]["outcome"]
        assert result is not None and result["ok"] is True, f"{name}: {result}"


def test_malformed_commands_get_an_error_and_change_nothing(phases):
    phase = phases["malformed"]
    results = phase["outcome"]
    for payload, result in zip(MALFORMED, results):
        assert result is not None, f"no cmd/result for {payload!r}"
        assert result["ok"] is False and result.get("error"), f"{payload!r} -> {result}"
    # Still active: no status change and the 200 ms cadence continues.
    assert phase["statuses"] == [], f"malformed commands changed the status: {phase['statuses']}"
    assert phase["median"] is not None and abs(phase["median"] - 0.2) <= 0.05, phase["gaps"]
