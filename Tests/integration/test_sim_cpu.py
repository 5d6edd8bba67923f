"""CPU share of empalink-sim streaming 20 wristbands to one client (a measurement, not a pass/fail figure).

Skipped unless EMPALINK_SIM_CPU=1:

    EMPALINK_SIM_CPU=1 .venv/bin/python -m pytest -q -s Tests/integration/test_sim_cpu.py

A dbus-fast client discovers 20 simulated wristbands, connects to each, acquires notification fds on every notify
characteristic (as the agent does), writes the start command and reads for 20 s; the simulator's CPU time comes
from /proc/PID/stat (utime + stime) over the same wall-clock period.
"""
import asyncio
import os
import struct
import time

import pytest

from test_sim_bleak import BUS_CONFIG, stop

import pathlib
import subprocess
import tempfile

from conftest import bin_dir

DEVICES = 20
SECONDS = 20
NOTIFY = {"char000d": 0x3EA1, "char0010": 0x3EA3, "char0013": 0x3EA6, "char0016": 0x3EA8,
          "char001a": 0x3EB2, "char001d": 0x3EB3}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields after the command: state is [0]; utime and stime are fields 14 and 15 of the full line.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(os.environ.get("EMPALINK_SIM_CPU") != "1", reason="measurement; set EMPALINK_SIM_CPU=1")
def test_twenty_wristbands_cpu_share():
    from dbus_fast import BusType, Message, MessageType
    from dbus_fast.aio import MessageBus

    with tempfile.TemporaryDirectory(prefix="empalink-cpu-") as tmp:
        tmp = pathlib.Path(tmp)
        sock = tmp / "bus"
        (tmp / "bus.conf").write_text(BUS_CONFIG.format(socket=sock))
        processes = []
        try:
            processes.append(subprocess.Popen(["dbus-daemon", f"--config-file={tmp / 'bus.conf'}", "--nofork",
                                               "--nopidfile"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            while not sock.exists():
                time.sleep(0.02)
            address = f"unix:path={sock}"
            sim = subprocess.Popen([str(bin_dir() / "empalink-sim"), "--bus", address, "--devices", str(DEVICES),
                                    "--log-level", "warn"])
            processes.append(sim)
            time.sleep(1)

            async def run():
                bus = await MessageBus(bus_address=address, negotiate_unix_fd=True).connect()

                async def call(path, interface, member, signature="", body=()):
                    reply = await bus.call(Message(destination="org.bluez", path=path, interface=interface,
                                                   member=member, signature=signature, body=list(body)))
                    assert reply.message_type == MessageType.METHOD_RETURN, (member, path, reply.body)
                    return reply

                await call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
                await asyncio.sleep(2)
                await call("/org/bluez/hci0", "org.bluez.Adapter1", "StopDiscovery")
                counts = {"packets": 0}
                loop = asyncio.get_running_loop()
                fds = []
                for k in range(1, DEVICES + 1):
                    dev = f"/org/bluez/hci0/dev_00_07_80_A0_01_{k:02X}"
                    await call(dev, "org.bluez.Device1", "Connect")
                    for char, _ in NOTIFY.items():
                        service = "service000c" if char in ("char000d", "char0010", "char0013", "char0016") \
                            else "service0019"
                        reply = await call(f"{dev}/{service}/{char}", "org.bluez.GattCharacteristic1",
                                           "AcquireNotify", "a{sv}", [{}])
                        fd = reply.unix_fds[reply.body[0]]
                        os.set_blocking(fd, False)
                        fds.append(fd)

                        def readable(fd=fd):
                            try:
                                while os.read(fd, 64):
                                    counts["packets"] += 1
                            except BlockingIOError:
                                pass
                        loop.add_reader(fd, readable)
                    start = b"\x01" + struct.pack("<I", int(time.time()))
                    await call(f"{dev}/service0020/char0021", "org.bluez.GattCharacteristic1", "WriteValue",
                               "aya{sv}", [start, {}])
                cpu0, wall0, packets0 = cpu_seconds(sim.pid), time.monotonic(), counts["packets"]
                await asyncio.sleep(SECONDS)
                cpu1, wall1, packets1 = cpu_seconds(sim.pid), time.monotonic(), counts["packets"]
                for fd in fds:
                    loop.remove_reader(fd)
                    os.close(fd)
                bus.disconnect()
                return (cpu1 - cpu0) / (wall1 - wall0), (packets1 - packets0) / (wall1 - wall0)

            share, rate = asyncio.run(run())
            print(f"\nempalink-sim, {DEVICES} wristbands streaming: CPU {100 * share:.1f}% of one core, "
                  f"{rate:.0f} notifications/s received")
            assert rate > DEVICES * 10, "the client did not receive the streams"
        finally:
            for process in reversed(processes):
                stop(process)
