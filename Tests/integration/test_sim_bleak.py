"""Interoperability: bleak, a real BlueZ client nobody here wrote, against empalink-sim on a private bus.

bleak discovers the simulated wristband, connects, starts notifications on 3EA1 (BVP) and 3EA3 (ACC), writes the
start command to 3E71 and collects packets; they are decoded here from SPEC section 6 alone and compared with the
simulator's --truth files.
"""
import asyncio
import csv
import math
import os
import pathlib
import signal
import struct
import subprocess
import tempfile
import time

import pytest

from conftest import bin_dir
from simrig import BUS_CONFIG, stop


ADDRESS = "00:07:80:A0:01:01"
SERIAL = "a00101"


def uuid16(short):
    return f"0000{short:04x}-0000-1000-8000-00805f9b34fb"




@pytest.fixture
def simulator():
    """A private dbus-daemon and empalink-sim with one wristband; yields (bus address, truth dir, sim process)."""
    yield from serve(["--devices", "1"])


@pytest.fixture
def strap_simulator():
    """As `simulator`, with one Heart Rate Service strap instead (device 1, `--devices 0 --hrs 1`)."""
    yield from serve(["--devices", "0", "--hrs", "1"])


def serve(devices):
    sim_bin = bin_dir() / "empalink-sim"
    if not sim_bin.exists():
        pytest.fail(f"{sim_bin} is missing: run `make build` first (or set EMPALINK_BIN)")
    with tempfile.TemporaryDirectory(prefix="empalink-bleak-") as tmp:
        tmp = pathlib.Path(tmp)
        socket = tmp / "bus"
        (tmp / "bus.conf").write_text(BUS_CONFIG.format(socket=socket))
        processes = []
        try:
            bus = subprocess.Popen(["dbus-daemon", f"--config-file={tmp / 'bus.conf'}", "--nofork", "--nopidfile"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            processes.append(bus)
            deadline = time.monotonic() + 10
            while not socket.exists():
                assert time.monotonic() < deadline, "dbus-daemon did not create its socket"
                time.sleep(0.02)
            address = f"unix:path={socket}"
            truth = tmp / "truth"
            log = open(tmp / "sim.log", "w")
            # The simulator's defaults: bleak must work against them as it does against bluetoothd on a real radio.
            sim = subprocess.Popen([str(sim_bin), "--bus", address, *devices, "--seed", "11",
                                    "--truth", str(truth), "--log-level", "debug"],
                                   stdout=log, stderr=log)
            processes.append(sim)
            # Ready when the truth directory exists and org.bluez answers.
            deadline = time.monotonic() + 10
            env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
            while True:
                assert sim.poll() is None, f"empalink-sim exited: {(tmp / 'sim.log').read_text()}"
                probe = subprocess.run(["dbus-send", f"--bus={address}", "--print-reply", "--dest=org.bluez", "/",
                                        "org.freedesktop.DBus.ObjectManager.GetManagedObjects"],
                                       capture_output=True, env=env, timeout=5)
                if probe.returncode == 0:
                    break
                assert time.monotonic() < deadline, "org.bluez did not appear"
                time.sleep(0.05)
            yield address, truth, sim
        finally:
            for process in reversed(processes):
                stop(process)


def decode_bvp(packet, state):
    """SPEC 6, BVP: 22 seven-bit two's-complement deltas (green, red alternating), MSB of byte 0 first; the low 6
    bits of byte 19 are the counter. Integrate; value = -(green - EMA baseline), time constant 2 s at 64 Hz."""
    assert len(packet) == 20
    bits = int.from_bytes(packet, "big")
    alpha = 1 - math.exp(-1 / (2 * 64))
    rows = []
    for k in range(11):
        samples = []
        for j in (2 * k, 2 * k + 1):
            raw = (bits >> (160 - 7 * (j + 1))) & 0x7F
            samples.append(raw - 128 if raw & 0x40 else raw)
        state["green"] += samples[0]
        state["red"] += samples[1]
        level = float(state["green"])
        baseline = state.get("baseline", level)
        baseline += alpha * (level - baseline)
        state["baseline"] = baseline
        rows.append((state["green"], state["red"], baseline - level))
    return packet[19] & 0x3F, rows


def decode_acc(packet):
    """SPEC 6, ACC: 6 x (x, y, z) int8, then a little-endian u16 counter."""
    assert len(packet) == 20
    values = struct.unpack("<18b", packet[:18])
    return struct.unpack("<H", packet[18:])[0], [values[i:i + 3] for i in range(0, 18, 3)]


def read_truth(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_bleak_discovers_connects_and_streams_decodable_truth(simulator, monkeypatch):
    address, truth_dir, sim = simulator
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", address)
    from bleak import BleakClient, BleakScanner

    received = {"bvp": [], "acc": []}

    async def scenario():
        device = await BleakScanner.find_device_by_address(ADDRESS, timeout=10)
        assert device is not None, "bleak did not discover the simulated wristband"
        assert device.name == "Empatica E4"
        async with BleakClient(device) as client:
            uuids = {service.uuid for service in client.services}
            assert {uuid16(0x3EA0), uuid16(0x3EB0), uuid16(0x3E70)} <= uuids
            def collect(stream):
                return lambda _, data: received[stream].append((time.time(), bytes(data)))

            await client.start_notify(uuid16(0x3EA1), collect("bvp"))
            await client.start_notify(uuid16(0x3EA3), collect("acc"))
            await client.write_gatt_char(uuid16(0x3E71), b"\x01" + struct.pack("<I", int(time.time())), response=True)
            deadline = time.monotonic() + 10
            while len(received["bvp"]) + len(received["acc"]) < 60 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            battery = await client.read_gatt_char(uuid16(0x3EB3))
            assert 0 <= battery[0] <= 100

    asyncio.run(scenario())
    total = len(received["bvp"]) + len(received["acc"])
    assert total >= 50, f"only {total} packets in 10 s"

    # Flush the truth: the simulator writes it completely when it exits.
    stop(sim)
    assert sim.returncode == 0, "SIGTERM must end empalink-sim cleanly"
    bvp_truth = [row for row in read_truth(truth_dir / SERIAL / "bvp.csv") if row["session"] == "1"]
    acc_truth = [row for row in read_truth(truth_dir / SERIAL / "acc.csv") if row["session"] == "1"]

    state = {"green": 0, "red": 0}
    index = 0
    for arrival, packet in received["bvp"]:
        counter, rows = decode_bvp(packet, state)
        for green, red, value in rows:
            row = bvp_truth[index]
            assert int(row["counter"]) == counter
            assert int(row["green"]) == green and int(row["red"]) == red, f"BVP sample {index}"
            assert abs(float(row["value"]) - value) <= 1e-3 * max(1.0, abs(value)), f"BVP value {index}"
            index += 1
        # A packet arrives after the intended time of its last sample, within a tick and the bus latency.
        assert 0 <= arrival - float(bvp_truth[index - 1]["t"]) < 1.0
    assert index >= 11 * 20

    index = 0
    for arrival, packet in received["acc"]:
        counter, samples = decode_acc(packet)
        for x, y, z in samples:
            row = acc_truth[index]
            assert int(row["counter"]) == counter
            assert (int(row["x"]), int(row["y"]), int(row["z"])) == (x, y, z), f"ACC sample {index}"
            index += 1
        assert 0 <= arrival - float(acc_truth[index - 1]["t"]) < 1.0

    beats = read_truth(truth_dir / SERIAL / "beats.csv")
    assert len(beats) >= 5
    assert all(float(b["peak_time"]) > float(b["foot_time"]) for b in beats)


STRAP_ADDRESS = "A0:9E:1A:B0:01:01"
STRAP_SERIAL = "b00101"


def decode_heart_rate_measurement(value):
    """0x2A37 from the GATT Specification Supplement alone: flags, uint8/uint16 HR, energy if flagged, RR in 1/1024 s."""
    flags = value[0]
    offset = 1
    if flags & 0x01:
        rate = struct.unpack_from("<H", value, offset)[0]
        offset += 2
    else:
        rate = value[offset]
        offset += 1
    if flags & 0x08:
        offset += 2
    rr = list(struct.unpack_from(f"<{(len(value) - offset) // 2}H", value, offset)) if flags & 0x10 else []
    assert offset + 2 * len(rr) == len(value)
    contact = None if not flags & 0x04 else bool(flags & 0x02)
    return rate, contact, rr


def test_bleak_reads_a_simulated_strap_as_a_real_one(strap_simulator, monkeypatch):
    """bleak finds the strap by its advertised Heart Rate service, reads Body Sensor Location, Battery Level and the
    Device Information strings, subscribes to 0x2A37 (no start command: a strap streams once subscribed) and gets
    RR intervals equal to the simulator's truth."""
    address, truth_dir, sim = strap_simulator
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", address)
    from bleak import BleakClient, BleakScanner

    received = []
    found = {}

    async def scenario():
        device = await BleakScanner.find_device_by_filter(
            lambda d, adv: uuid16(0x180D) in adv.service_uuids, timeout=10)
        assert device is not None, "bleak did not find a device advertising the Heart Rate service"
        assert device.address == STRAP_ADDRESS
        async with BleakClient(device) as client:
            uuids = {service.uuid for service in client.services}
            assert {uuid16(0x180D), uuid16(0x180F), uuid16(0x180A)} <= uuids
            found["location"] = await client.read_gatt_char(uuid16(0x2A38))
            found["battery"] = await client.read_gatt_char(uuid16(0x2A19))
            found["manufacturer"] = (await client.read_gatt_char(uuid16(0x2A29))).decode()
            found["serial"] = (await client.read_gatt_char(uuid16(0x2A25))).decode()
            await client.start_notify(uuid16(0x2A37), lambda _, data: received.append(bytes(data)))
            deadline = time.monotonic() + 12
            while len(received) < 8 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)

    asyncio.run(scenario())
    assert found["location"] == b"\x01"  # chest
    assert 0 < found["battery"][0] <= 100
    assert found["manufacturer"] == "EmpaLink Simulator" and found["serial"] == STRAP_SERIAL.upper()
    assert len(received) >= 8, f"only {len(received)} heart-rate notifications in 12 s"

    stop(sim)
    assert sim.returncode == 0
    decoded = [decode_heart_rate_measurement(value) for value in received]
    rr = [value for _, _, values in decoded for value in values]
    notes = read_truth(truth_dir / STRAP_SERIAL / "hrs.csv")
    rr_truth = [int(row["rr_1024"]) for row in read_truth(truth_dir / STRAP_SERIAL / "rr.csv")]
    # Every notification was delivered, in order, and carries exactly the truth's HR, contact and RR.
    assert [int(row["hr"]) for row in notes][:len(decoded)] == [rate for rate, _, _ in decoded]
    assert [row["contact"] == "1" for row in notes][:len(decoded)] == [contact for _, contact, _ in decoded]
    assert rr == rr_truth[:len(rr)] and len(rr) >= 6
