"""Several adapters on one board (SPEC §18, Docs/operations.md "Several adapters on one board"): empalinkd with
`bluetooth.adapter = ["hci0", "hci1"]` against `empalink-sim --adapters 2` (one device object per adapter that hears
a wristband, one central at a time per wristband) and a real mosquitto.

Checks: every whitelisted wristband connected exactly once (the simulator's Stats: the adapter holding each link),
spread by free slots (`max_connections` per adapter), never two attempts in flight on one adapter (the agent's log
order), each status topic connected once with no `disconnected` after it (the other adapter's object does not speak
for it), data from every wristband, metrics naming the adapter; fleet mode publishes both adapters' slots.
"""
import json
import os
import re
import subprocess
import sys
import time

from agent_rig import PREFIX, Rig, serial, stop, wait_until

ADAPTERS = '["hci0", "hci1"]'


def two_adapter_config(rig, whitelist, max_connections, extra=""):
    text = rig.config_text(whitelist, extra=extra)
    assert 'adapter = "hci0"\n' in text
    return text.replace('adapter = "hci0"\n', f"adapter = {ADAPTERS}\nmax_connections = {max_connections}\n")


def statuses(rig, k):
    return [m.json.get("status") for m in rig.subscriber.all(rig.topic(serial(k), "status")) if m.json]


def test_wristbands_are_spread_over_two_adapters_one_attempt_at_a_time():
    devices = 4
    with Rig(devices=devices, adapters=2) as rig:
        rig.start_agent(two_adapter_config(rig, list(range(1, devices + 1)), max_connections=2))
        everyone = wait_until(lambda: all((rig.device_status(k) or {}).get("status") == "connected"
                                          for k in range(1, devices + 1)), 60)
        assert everyone, f"not all connected: {[rig.device_status(k) for k in range(1, devices + 1)]}\n" \
                         f"{rig.agent_log_text()[-3000:]}"

        # The simulator's view: each wristband linked through one adapter, two per adapter (the slots).
        stats = rig.sim_stats()
        holding = {}
        for name, entry in stats["devices"].items() if isinstance(stats.get("devices"), dict) else []:
            if entry.get("connected") or entry.get("state") == "connected":
                holding[name] = entry.get("adapter")
        per_adapter = {}
        for adapter in holding.values():
            per_adapter[adapter] = per_adapter.get(adapter, 0) + 1
        assert per_adapter == {"hci0": 2, "hci1": 2}, f"links per adapter {per_adapter}; stats {json.dumps(stats)[:2000]}"

        # The agent's metrics say the same, per wristband.
        def metrics():
            found = [m.json for m in rig.subscriber.all(rig.topic("metrics")) if m.json]
            return found[-1] if found else None
        time.sleep(2.5)
        latest = metrics()
        assert latest is not None
        adapters = {k: latest["devices"][serial(k)]["adapter"] for k in range(1, devices + 1)}
        assert sorted(adapters.values()) == ["hci0", "hci0", "hci1", "hci1"], adapters
        assert {serial(k): a for k, a in adapters.items()} == holding, (adapters, holding)

        # Data from every wristband.
        for k in range(1, devices + 1):
            assert rig.subscriber.all(rig.topic(serial(k), "bvp")), f"no bvp from {serial(k)}"

        # Each status: once connected it stays so (the other adapter's disconnected object does not speak for it).
        for k in range(1, devices + 1):
            seen = statuses(rig, k)
            first = seen.index("connected")
            assert "disconnected" not in seen[first:], (serial(k), seen)

        # One attempt in flight per adapter, in the order the agent logged them.
        in_flight = {}
        adapter_of = {}
        for line in rig.agent_log_text().splitlines():
            started = re.search(r"connecting ([0-9a-f]{6}) on (hci\d+)", line)
            if started:
                name, adapter = started.groups()
                assert not in_flight.get(adapter), f"{name} started on {adapter} while {in_flight[adapter]} was " \
                                                   f"connecting"
                in_flight[adapter] = name
                adapter_of[name] = adapter
                continue
            ended = re.search(r"info: ([0-9a-f]{6}) (connected|disconnected) DEVICE", line)
            if ended and adapter_of.get(ended.group(1)) and in_flight.get(adapter_of[ended.group(1)]) == ended.group(1):
                in_flight[adapter_of[ended.group(1)]] = None
        assert len(adapter_of) == devices, (adapter_of, rig.agent_log_text()[-2000:])

        # systemd-style summary counts wristbands, not objects.
        status = json.loads(rig.ctl("status", "--socket", str(rig.control_socket)).stdout or "{}")
        assert sorted(status.get("devices", {})) == sorted(serial(k) for k in range(1, devices + 1)), status


def test_fleet_presence_lists_both_adapters_with_their_slots():
    with Rig(devices=1, adapters=2) as rig:
        rig.start_agent(two_adapter_config(rig, [], max_connections=3, extra="\n[fleet]\nenabled = true\n"))
        topic = f"{PREFIX}/fleet/board/"

        def presence():
            found = [m.json for m in rig.subscriber.all() if m.topic.startswith(topic) and m.json]
            return found[-1] if found else None
        document = wait_until(presence, 20)
        assert document is not None, rig.agent_log_text()[-2000:]
        assert document["online"] is True
        both = [{"name": "hci0", "capacity": 3, "free": 3}, {"name": "hci1", "capacity": 3, "free": 3}]
        assert wait_until(lambda: (presence() or {}).get("adapters") == both, 10), presence()

        # hci1 powered off: its slots are gone from the presence (.adaptersChanged), and back with it.
        assert rig.sim_call("SetAdapterPowered", "string:hci1", "boolean:false").returncode == 0
        without = [both[0], {"name": "hci1", "capacity": 0, "free": 0}]
        assert wait_until(lambda: (presence() or {}).get("adapters") == without, 10), presence()
        assert "fleet: usable adapters hci0" in rig.agent_log_text()
        assert rig.sim_call("SetAdapterPowered", "string:hci1", "boolean:true").returncode == 0
        assert wait_until(lambda: (presence() or {}).get("adapters") == both, 10), presence()


SCAN_HCI0 = """
import asyncio, sys
from bleak import BleakScanner
async def main():
    async with BleakScanner(adapter="hci0"):
        print("scanning", flush=True)
        await asyncio.sleep(float(sys.argv[1]))
asyncio.run(main())
"""


def test_one_adapter_of_two_uses_only_its_own_device_objects():
    """`adapter = "hci1"` on a host with two, and another client (bleak) starts scanning on hci0 once the agent runs:
    BlueZ then also has hci0's objects of every wristband, which are not the agent's (before, the API tracked every
    adapter's new objects: each wristband twice in `P/A/devices`, and a second connection through hci0)."""
    with Rig(devices=3, adapters=2) as rig:
        # Wristband 3 is not whitelisted: it keeps advertising, so hci0 hears it once bleak scans there.
        text = rig.config_text([1, 2])
        rig.start_agent(text.replace('adapter = "hci0"\n', 'adapter = "hci1"\n'))
        connected = wait_until(lambda: all((rig.device_status(k) or {}).get("status") == "connected"
                                           for k in (1, 2)), 60)
        assert connected, rig.agent_log_text()[-2000:]
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.bus_address)
        scanner = subprocess.Popen([sys.executable, "-c", SCAN_HCI0, "60"], env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        try:
            assert scanner.stdout.readline().strip() == "scanning"
            # bleak's discovery made hci0's object of wristband 3 (1 and 2 are connected: they do not advertise).
            exported = wait_until(lambda: rig.sim_stats()["adapters"]["hci0"]["devices"][serial(3)]["exported"], 10)
            assert exported
            time.sleep(2.5)   # a metrics interval or two: P/A/devices is republished
            devices = rig.sim_stats()["devices"]
            assert {name: entry.get("adapter") for name, entry in devices.items() if entry.get("connected")} == \
                {serial(1): "hci1", serial(2): "hci1"}, devices
            status = json.loads(rig.ctl("status", "--socket", str(rig.control_socket)).stdout or "{}")
            assert sorted(status["devices"]) == [serial(1), serial(2), serial(3)], status
            assert "adapter" not in status["metrics"]["devices"][serial(1)], "one adapter: no adapter member"
            raw = [m.payload for m in rig.subscriber.all(rig.topic("devices"))]
            text = raw[-1].decode() if raw and isinstance(raw[-1], bytes) else (raw[-1] if raw else "")
            assert text.count('"address"') == 3, text
        finally:
            stop(scanner)
