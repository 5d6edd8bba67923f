"""Issue 23, items 3 and 11: MQTT commands on `P/A/cmd`.

A retained command is not run again at every (re)connect: it is answered with an error that says it was ignored,
and clearing it (an empty retained message) is not answered as malformed. JSON `\\u` escapes are accepted. Refused
commands and rescans reach the log, rate-limited.
"""
import json
import socket
import time

import pytest

from agent_rig import Rig, wait_until

FLOOD = 40


def results_after(rig, index):
    return [m.json for m in rig.subscriber.all(rig.topic("cmd", "result"))[index:]]


def control_request(rig, line):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(5)
        client.connect(str(rig.control_socket))
        client.sendall(line.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = client.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


@pytest.fixture(scope="module")
def run():
    record = {}
    with Rig(devices=1) as rig:
        cmd = rig.topic("cmd")
        result_topic = rig.topic("cmd", "result")
        # Left behind by an operator: `mosquitto_pub -r -t P/A/cmd -m '{"mode":"background"}'`.
        rig.subscriber.client.publish(cmd, json.dumps({"mode": "background"}), qos=1, retain=True).wait_for_publish(5)
        rig.start_agent(rig.config_text([]))
        record["retained_result"] = wait_until(lambda: results_after(rig, 0), 5)
        time.sleep(1.0)
        record["modes_after_start"] = [m.json.get("mode") for m in rig.subscriber.all(rig.topic("status"))]

        # Clearing it reaches the agent as an empty message: no answer, above all no "malformed".
        before = len(rig.subscriber.all(result_topic))
        rig.subscriber.client.publish(cmd, b"", qos=1, retain=True).wait_for_publish(5)
        time.sleep(1.0)
        record["after_clear"] = results_after(rig, before)

        # \u escapes are JSON: "\u0062ackground" is "background".
        before = len(rig.subscriber.all(result_topic))
        rig.subscriber.publish(cmd, '{"mode":"\\u0062ackground"}')
        record["escaped"] = wait_until(lambda: results_after(rig, before), 5)
        before = len(rig.subscriber.all(result_topic))
        rig.subscriber.publish(cmd, '{"\\u006dode":"resume", "x\\ud83d\\ude00":1}')
        record["escaped_unknown"] = wait_until(lambda: results_after(rig, before), 5)

        # A live command still works, and a rescan is logged.
        before = len(rig.subscriber.all(result_topic))
        rig.subscriber.publish(cmd, json.dumps({"rescan": True}))
        record["rescan"] = wait_until(lambda: results_after(rig, before), 5)

        # The control socket: a rescan and an unknown request reach the log too.
        record["socket_answers"] = [control_request(rig, "rescan"), control_request(rig, "frobnicate now")]

        # A flood of refused commands: each answered, the log keeps a bounded number of lines.
        before = len(rig.subscriber.all(result_topic))
        for i in range(FLOOD):
            rig.subscriber.client.publish(cmd, '{"mode":"sideways-%d"}' % i, qos=1)
        wait_until(lambda: len(results_after(rig, before)) >= FLOOD, 10)
        record["flood_results"] = results_after(rig, before)
        time.sleep(0.3)
        record["log"] = rig.agent_log_text()
    return record


def test_retained_command_is_ignored_and_says_so(run):
    results = run["retained_result"]
    assert results, f"no cmd/result for the retained command:\n{run['log'][-2000:]}"
    assert results[0]["ok"] is False and "retained" in results[0]["error"], results
    assert "background" not in run["modes_after_start"], f"the retained command ran: {run['modes_after_start']}"
    assert "rejected retained MQTT command" in run["log"], run["log"][-2000:]


def test_clearing_the_retained_command_is_not_answered_as_malformed(run):
    assert run["after_clear"] == [], run["after_clear"]
    assert "malformed" not in run["log"].split("ignored an empty message")[-1].split("\n")[0]


def test_unicode_escapes_are_accepted(run):
    escaped = run["escaped"]
    assert escaped and escaped[0] == {"ok": True, "command": {"mode": "background"}, "result": "mode background"}, \
        escaped
    unknown = run["escaped_unknown"]
    # Two keys, so not a command, but it parses: the error is "unknown command", not a complaint about escapes.
    assert unknown and unknown[0]["ok"] is False and unknown[0]["error"].startswith("unknown command"), unknown


def test_rescan_and_refused_commands_reach_the_log_rate_limited(run):
    assert run["rescan"] and run["rescan"][0]["ok"] is True, run["rescan"]
    log = run["log"]
    assert "rescan requested (MQTT command)" in log, log[-2000:]
    assert len(run["flood_results"]) == FLOOD, len(run["flood_results"])
    rejected = [line for line in log.splitlines() if "rejected MQTT command" in line]
    assert rejected, log[-2000:]
    assert any("sideways-0" in line for line in rejected), rejected
    assert len(rejected) <= 10, f"{len(rejected)} lines for {FLOOD} refused commands: not rate-limited"


def test_control_socket_rescans_and_refusals_reach_the_log(run):
    rescan, unknown = run["socket_answers"]
    assert rescan["ok"] is True and unknown["ok"] is False, run["socket_answers"]
    assert "rescan requested (control socket)" in run["log"], run["log"][-2000:]
    assert 'rejected control command "frobnicate now": unknown command' in run["log"], run["log"][-2000:]
