"""Issue 22 (simulator side): empalink-sim's ward mode, one process serving two boards' private buses.

Two dbus-daemons, one `empalink-sim --ward` with boards `a` and `b` 10 m apart and one wristband 4 m from `a`. A
client on bus A connects it; on bus B its Connect fails as bluetoothd's does when nobody answers
(org.bluez.Error.Failed, le-connection-abort-by-local, after the connect timeout) and it is not discovered there
while connected on A; `Stats` on either bus names board `a`. Free again, it is heard on B; then it walks to `b`
and B's RSSI follows the distance. `ward.csv` holds the truth of every link.
"""
import asyncio
import csv
import pathlib
import subprocess
import tempfile
import time

import pytest

from conftest import bin_dir
from simrig import BUS_CONFIG, stop
import wardtruth

DEVICE = "/org/bluez/hci0/dev_00_07_80_A0_01_01"
ADAPTER = "/org/bluez/hci0"
# The walk to b starts at 11 s, after the arbitration steps (about 8 s), and ends 1 m from b at 13 s.
WARD = """
[timing]
connect_timeout_s = 2

[ward]
noise_db = 0

[[ward.board]]
name = "a"
x = 0
y = 0

[[ward.board]]
name = "b"
x = 10
y = 0

[[device]]
index = 1
route = [[0, 4, 0], [11, 4, 0], [13, 9, 0]]
"""


def start_bus(tmp, name):
    directory = tmp / name
    directory.mkdir()
    socket = directory / "bus"
    (directory / "bus.conf").write_text(BUS_CONFIG.format(socket=socket))
    process = subprocess.Popen(["dbus-daemon", f"--config-file={directory / 'bus.conf'}", "--nofork", "--nopidfile"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not socket.exists():
        assert time.monotonic() < deadline, "dbus-daemon did not create its socket"
        time.sleep(0.02)
    return process, f"unix:path={socket}"


def ping(address):
    return subprocess.run(["dbus-send", f"--bus={address}", "--print-reply", "--dest=org.empalink.Simulator",
                           "/org/empalink/simulator", "org.freedesktop.DBus.Peer.Ping"],
                          capture_output=True, timeout=10).returncode == 0


def test_a_wristband_connected_on_one_board_is_unreachable_and_unheard_on_the_other():
    from dbus_fast import Message, MessageType
    from dbus_fast.aio import MessageBus

    sim_bin = bin_dir() / "empalink-sim"
    if not sim_bin.exists():
        pytest.fail(f"{sim_bin} is missing: run `make build` first (or set EMPALINK_BIN)")
    with tempfile.TemporaryDirectory(prefix="empalink-ward-") as tmp:
        tmp = pathlib.Path(tmp)
        processes = []
        try:
            bus_a, address_a = start_bus(tmp, "a")
            processes.append(bus_a)
            bus_b, address_b = start_bus(tmp, "b")
            processes.append(bus_b)
            (tmp / "ward.toml").write_text(WARD)
            truth = tmp / "truth"
            log = open(tmp / "sim.log", "w")
            sim = subprocess.Popen([str(sim_bin), "--ward", str(tmp / "ward.toml"), "--bus", f"a={address_a}",
                                    "--bus", f"b={address_b}", "--devices", "1", "--truth", str(truth),
                                    "--log-level", "info"], stdout=log, stderr=log)
            processes.append(sim)
            deadline = time.monotonic() + 10
            while not (ping(address_a) and ping(address_b)):
                assert sim.poll() is None, f"empalink-sim exited: {(tmp / 'sim.log').read_text()}"
                assert time.monotonic() < deadline, "empalink-sim did not come up on both buses"
                time.sleep(0.05)
            started = time.monotonic()

            async def run():
                a = await MessageBus(bus_address=address_a).connect()
                b = await MessageBus(bus_address=address_b).connect()

                async def call(bus, path, interface, member, signature="", body=(), destination="org.bluez"):
                    return await bus.call(Message(destination=destination, path=path, interface=interface,
                                                  member=member, signature=signature, body=list(body)))

                async def ok(bus, path, interface, member, signature="", body=(), destination="org.bluez"):
                    reply = await call(bus, path, interface, member, signature, body, destination)
                    assert reply.message_type == MessageType.METHOD_RETURN, (member, path, reply.body)
                    return reply.body

                async def exported(bus):
                    (objects,) = await ok(bus, "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
                    return DEVICE in objects

                async def rssi(bus):
                    reply = await call(bus, DEVICE, "org.freedesktop.DBus.Properties", "Get", "ss",
                                       ["org.bluez.Device1", "RSSI"])
                    return reply.body[0].value if reply.message_type == MessageType.METHOD_RETURN else None

                async def holder(bus):
                    (stats,) = await ok(bus, "/org/empalink/simulator", "org.empalink.Simulator1", "Stats",
                                        destination="org.empalink.Simulator")
                    return stats["board"].value, stats["devices"].value["a00101"]["board"].value

                async def until(condition, limit):
                    deadline = time.monotonic() + limit
                    while time.monotonic() < deadline:
                        if await condition():
                            return True
                        await asyncio.sleep(0.1)
                    return False

                for bus in (a, b):
                    await ok(bus, ADAPTER, "org.bluez.Adapter1", "StartDiscovery")
                assert await until(lambda: exported(a), 5) and await until(lambda: exported(b), 5), \
                    "free, the wristband advertises to both boards"
                assert await rssi(a) == -77 and await rssi(b) == -82, "4 m and 6 m: -59 - 30 log10(d)"

                await ok(a, DEVICE, "org.bluez.Device1", "Connect")
                assert await holder(a) == ("a", "a") and await holder(b) == ("b", "a")

                t0 = time.monotonic()
                refused = await call(b, DEVICE, "org.bluez.Device1", "Connect")
                waited = time.monotonic() - t0
                assert refused.message_type == MessageType.ERROR, "a second board connected a connected wristband"
                assert refused.error_name == "org.bluez.Error.Failed"
                assert refused.body == ["le-connection-abort-by-local"]
                assert waited >= 1.9, f"refused after {waited:.2f} s, not after the connect timeout"

                await ok(b, ADAPTER, "org.bluez.Adapter1", "RemoveDevice", "o", [DEVICE])
                await asyncio.sleep(2.5)
                assert not await exported(b), "a connected E4 does not advertise"

                await ok(a, DEVICE, "org.bluez.Device1", "Disconnect")
                assert await until(lambda: exported(b), 5), "free again, it is heard on b"
                assert await holder(b) == ("b", "")
                near_a = await rssi(b)
                assert near_a == -82
                assert time.monotonic() - started < 10.5, "the steps above overran the scripted walk"
                assert await until(lambda: rssi_at_least(b, -62), 10), "1 m from b after its walk"
                a.disconnect()
                b.disconnect()

            async def rssi_at_least(bus, floor):
                from dbus_fast import Message as M
                reply = await bus.call(M(destination="org.bluez", path=DEVICE,
                                         interface="org.freedesktop.DBus.Properties", member="Get", signature="ss",
                                         body=["org.bluez.Device1", "RSSI"]))
                return reply.message_type == MessageType.METHOD_RETURN and reply.body[0].value >= floor

            asyncio.run(run())
            assert sim.poll() is None, (tmp / "sim.log").read_text()
            stop(sim)
            assert sim.returncode == 0, (tmp / "sim.log").read_text()
            with open(truth / "ward.csv") as handle:
                rows = list(csv.DictReader(handle))
            assert [(r["board"], r["serial"], r["event"]) for r in rows] == [
                ("a", "a00101", "connect"), ("b", "a00101", "refused"), ("a", "a00101", "disconnect")]
            assert rows[1]["reason"] == "connected to a"
            assert wardtruth.overlaps(rows) == []
            assert 0.5 < wardtruth.connected_seconds(rows, "a00101") < 5
            assert all(float(r["wall"]) - float(r["t"]) == pytest.approx(float(rows[0]["wall"]) - float(rows[0]["t"]),
                                                                         abs=1e-5) for r in rows)
        finally:
            for process in reversed(processes):
                stop(process)


def test_the_ward_truth_reader_finds_two_boards_at_once():
    def row(t, board, serial, event):
        return {"t": str(t), "wall": str(1e9 + t), "board": board, "serial": serial, "event": event, "reason": ""}
    fine = [row(1, "a", "s1", "connect"), row(2, "b", "s1", "refused"), row(3, "a", "s1", "disconnect"),
            row(3.5, "b", "", "radio_off"), row(4, "b", "s1", "connect"), row(5, "a", "s2", "connect")]
    assert wardtruth.overlaps(fine, end=10) == []
    assert wardtruth.links(fine, end=10) == {"s1": [("a", 1, 3), ("b", 4, 10)], "s2": [("a", 5, 10)]}
    assert wardtruth.connected_seconds(fine, "s1", end=10) == 8
    both = fine + [row(6, "a", "s1", "connect")]
    assert wardtruth.overlaps(both, end=10) == [("s1", ("b", 4, 10), ("a", 6, 10))]
