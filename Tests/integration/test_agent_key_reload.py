"""Issue 23, item 7: `empalinkctl key add` then SIGHUP (`systemctl reload`) unlocks a wristband that was "not
allowed", without a restart: the reload re-reads the API key file and the keyring. A reload whose key file cannot
be read is rejected and changes nothing.
"""
import json
import signal
import subprocess

import pytest

from agent_rig import Rig, serial, wait_until


def key_add(rig, devices, keyring):
    made = subprocess.run([str(rig.bin / "empalinkctl"), "key", "add", "--devices", devices, "--keyring",
                           str(keyring)], capture_output=True, text=True, timeout=20)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip().splitlines()[0]


def allowed(rig, k):
    devices = rig.subscriber.all(rig.topic("devices"))
    return devices and devices[-1].json.get(serial(k), {}).get("allowed")


@pytest.fixture(scope="module")
def run():
    record = {}
    with Rig(devices=2) as rig:
        keyring = rig.tmp / "ward-keyring.toml"
        key_file = rig.tmp / "ward-key"
        key_file.write_text(key_add(rig, serial(1), keyring) + "\n")
        text = rig.config_text([1, 2]).replace(str(rig.key_file), str(key_file)).replace(str(rig.keyring),
                                                                                         str(keyring))
        rig.start_agent(text)
        record["first"] = bool(rig.wait_connected(1, 20))
        record["second_not_allowed"] = wait_until(lambda: allowed(rig, 2) is False, 10) is not None
        record["second_before"] = rig.device_status(2)

        # A reload with an unreadable key file is rejected; nothing changes.
        rig.config_path.write_text(text.replace(str(key_file), str(rig.tmp / "missing-key")))
        rig.agent.send_signal(signal.SIGHUP)
        record["rejected"] = wait_until(
            lambda: "reload rejected: keeping the running configuration" in rig.agent_log_text(), 5) is not None
        record["first_after_rejected"] = rig.device_status(1)

        # The documented fix: a key for both wristbands, put where the agent reads it, then reload.
        key_file.write_text(key_add(rig, f"{serial(1)},{serial(2)}", keyring) + "\n")
        rig.config_path.write_text(text)
        rig.agent.send_signal(signal.SIGHUP)
        record["second_connected"] = bool(rig.wait_connected(2, 15))
        record["first_final"] = rig.device_status(1)
        record["stats"] = rig.sim_stats()["devices"]
        record["alive"] = rig.agent.poll() is None
        record["log"] = rig.agent_log_text()
    return record


def test_key_add_and_reload_unlocks_the_wristband(run):
    assert run["first"], run["log"][-2000:]
    assert run["second_not_allowed"], "wristband 2 should start as not allowed"
    assert run["second_before"] is None, run["second_before"]
    assert run["second_connected"], f"wristband 2 did not connect after key add + SIGHUP:\n{run['log'][-2000:]}"
    assert "API key and keyring re-read" in run["log"]
    assert run["alive"]


def test_reload_with_an_unreadable_key_file_is_rejected(run):
    assert run["rejected"], run["log"][-2000:]
    assert "missing-key" in run["log"] and "No such file or directory" in run["log"]
    assert run["first_after_rejected"]["status"] == "connected"


def test_the_first_wristband_kept_its_session(run):
    assert run["first_final"]["status"] == "connected"
    assert run["stats"][serial(1)]["connects"] == 1, run["stats"]
