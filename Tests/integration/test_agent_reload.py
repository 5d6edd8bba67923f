"""Issue 6 acceptance, live reload and the Last Will (SPEC §4, §10, §12).

SIGHUP with a wristband added to the whitelist connects it without a restart; a reload with a syntax error or an
unknown key is rejected (logged) and changes nothing; after `kill -9` the broker publishes the retained Last Will
`{"state":"offline"}`.
"""
import signal
import time

import pytest

from agent_rig import Rig, serial, wait_until

QUIET_S = 3.0


def rejected_count(rig):
    return rig.agent_log_text().count("reload rejected: keeping the running configuration")


@pytest.fixture(scope="module")
def run():
    record = {"invalid": {}}
    with Rig(devices=3) as rig:
        rig.start_agent(rig.config_text([1]))
        record["first_connected"] = bool(rig.wait_connected(1, 20))
        first_sid = (rig.device_status(1) or {}).get("sid")
        record["first_sid"] = first_sid

        invalid = {
            "syntax error": rig.config_text([1, 2]) + "broken = = 1\n",
            "unknown key": rig.config_text([1, 2], extra="no_such_key = true\n"),
        }
        for name, text in invalid.items():
            before = rejected_count(rig)
            rig.config_path.write_text(text)
            rig.agent.send_signal(signal.SIGHUP)
            logged = wait_until(lambda: rejected_count(rig) > before, 5)
            time.sleep(QUIET_S)
            record["invalid"][name] = {
                "logged": bool(logged),
                "second_topics": [m.topic for m in rig.subscriber.all() if m.topic.startswith(
                    rig.topic(serial(2)) + "/")],
                "first_status": rig.device_status(1),
                "stats": rig.sim_stats()["devices"],
                "alive": rig.agent.poll() is None,
            }

        rig.config_path.write_text(rig.config_text([1, 2]))
        reload_at = time.monotonic()
        rig.agent.send_signal(signal.SIGHUP)
        record["second_connected"] = bool(rig.wait_connected(2, 15))
        record["second_connect_s"] = time.monotonic() - reload_at
        record["first_statuses_after"] = [m.json["status"] for m in rig.subscriber.all(rig.topic(serial(1), "status"))
                                          if m.arrival >= reload_at]
        record["first_status_final"] = rig.device_status(1)
        record["stats"] = rig.sim_stats()["devices"]
        record["retained_before_kill"] = rig.retained(rig.topic("status"))

        killed_at = time.monotonic()
        rig.agent.send_signal(signal.SIGKILL)
        rig.agent.wait(timeout=5)
        will = rig.subscriber.wait_for(
            lambda m: m.topic == rig.topic("status") and m.arrival >= killed_at and m.json == {"state": "offline"}, 10)
        record["will_s"] = (will.arrival - killed_at) if will else None
        record["retained_after_kill"] = rig.retained(rig.topic("status"))
        record["log"] = rig.agent_log_text()
    return record


def test_first_wristband_connects(run):
    assert run["first_connected"], run["log"]


@pytest.mark.parametrize("name", ["syntax error", "unknown key"])
def test_invalid_reload_is_rejected_and_changes_nothing(run, name):
    outcome = run["invalid"][name]
    assert outcome["alive"], f"{name}: the agent died on SIGHUP"
    assert outcome["logged"], f"{name}: no 'reload rejected' in the log:\n{run['log'][-2000:]}"
    assert outcome["second_topics"] == [], f"{name}: wristband 2 was acted on: {outcome['second_topics']}"
    assert outcome["stats"][serial(2)]["connects"] == 0, f"{name}: wristband 2 got a Connect"
    first = outcome["first_status"]
    assert first["status"] == "connected" and first["sid"] == run["first_sid"], f"{name}: wristband 1 is now {first}"


def test_invalid_reload_logs_the_error_position(run):
    lines = [line for line in run["log"].splitlines() if "reload rejected" in line]
    assert any("error:" in line and "empalinkd.toml:" in line for line in lines), lines


def test_reload_adding_a_wristband_connects_it_without_a_restart(run):
    assert run["second_connected"], run["log"][-2000:]
    # Faster than the quiet window the invalid reloads were watched for, so their negative checks mean something.
    assert run["second_connect_s"] < QUIET_S, f"took {run['second_connect_s']:.1f} s"
    # The first one stayed connected in the same session the whole time.
    assert "disconnected" not in run["first_statuses_after"], run["first_statuses_after"]
    assert run["first_status_final"]["status"] == "connected"
    assert run["first_status_final"]["sid"] == run["first_sid"]
    assert run["stats"][serial(1)]["connects"] == 1
    assert run["stats"][serial(3)]["connects"] == 0, "a non-whitelisted wristband was connected"


def test_status_is_retained_and_kill_9_leaves_the_retained_last_will(run):
    before = run["retained_before_kill"]
    assert len(before) == 1 and before[0].json["state"] == "online"
    assert run["will_s"] is not None, "no Last Will after kill -9"
    assert run["will_s"] < 5
    after = run["retained_after_kill"]
    assert len(after) == 1 and after[0].json == {"state": "offline"}
    assert after[0].content_type == "application/json"
