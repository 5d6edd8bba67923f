"""Issue 23, item 12 (status truth), `empalinkctl status`: it says what the MQTT topics say. `allowed` means what it
means on `P/A/devices` (the key unlocks the wristband and it is whitelisted), and a connected wristband's RSSI is
null, not the last advertisement's value that bluetoothd no longer refreshes over a link.
"""
import json

from agent_rig import Rig, serial, wait_until


def test_ctl_status_agrees_with_the_devices_topic_and_drops_a_stale_rssi():
    with Rig(devices=2) as rig:
        rig.start_agent(rig.config_text(whitelist=[1]))
        assert rig.wait_connected(1), rig.agent_log_text()

        def both_seen():
            messages = rig.subscriber.all(rig.topic("devices"))
            latest = messages[-1].json if messages else {}
            # Once the devices topic follows the connect (it is republished when its content changes).
            return latest if serial(2) in latest and (latest.get(serial(1)) or {}).get("rssi", 0) is None else None
        assert wait_until(both_seen, 20), f"devices topic: {rig.subscriber.all(rig.topic('devices'))[-1:]}"
        devices = both_seen()
        result = rig.ctl("status", "--socket", str(rig.control_socket))
        assert result.returncode == 0, result.stderr
        status = json.loads(result.stdout)["devices"]
        # Wristband 2 is not whitelisted: not allowed, on the devices topic and in status alike.
        assert devices[serial(2)]["allowed"] is False
        assert status[serial(2)]["whitelisted"] is False
        assert status[serial(2)]["allowed"] is False, status[serial(2)]
        assert status[serial(1)]["allowed"] is True, status[serial(1)]
        # Connected: no RSSI (P/A/S/status and metrics say null too).
        assert status[serial(1)]["status"] == "connected"
        assert status[serial(1)]["rssi"] is None, status[serial(1)]
        # The devices topic too: the link's RSSI is not refreshed, so it is not reported.
        assert devices[serial(1)]["rssi"] is None, devices[serial(1)]
