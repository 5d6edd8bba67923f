#!/usr/bin/env python3
"""The peer of bench-daemon (SPEC §19): a bleak + paho forwarder, as one would write it in an afternoon.

It connects to every E4 on the (private) system bus with bleak, subscribes to the characteristics empalinkd
subscribes to (BVP 3EA1, ACC 3EA3, GSR 3EA6, temperature 3EA8, 3EB2, 3EB3), writes the start command to 3E71,
and publishes every notification unchanged with paho-mqtt at QoS 1 on `peer/SERIAL/UUID16`, the hex payload and
the receive time in a small JSON object. It does less than empalinkd: no decoding, no timestamps per sample, no
IBI or heart rate, no spool, no reconnects. It prints `streaming N` once every wristband has sent a notification.

    DBUS_SYSTEM_BUS_ADDRESS=unix:path=... peer_forwarder.py --port 1883 --devices 5
"""

import argparse
import asyncio
import json
import signal
import struct
import sys
import time

import paho.mqtt.client as mqtt
from bleak import BleakClient, BleakScanner

CHARACTERISTICS = (0x3EA1, 0x3EA3, 0x3EA6, 0x3EA8, 0x3EB2, 0x3EB3)
START = 0x3E71


def uuid16(short):
    return f"0000{short:04x}-0000-1000-8000-00805f9b34fb"


def address(k):
    return "00:07:80:A0:01:%02X" % k


async def forward(device_address, client_mqtt, seen):
    serial = device_address.replace(":", "").lower()[-6:]
    device = await BleakScanner.find_device_by_address(device_address, timeout=30)
    if device is None:
        raise RuntimeError(f"{device_address} not found")
    client = BleakClient(device)
    await client.connect()

    def handler(short):
        topic = f"peer/{serial}/{short:04x}"

        def on_notification(_, data):
            seen.add(serial)
            client_mqtt.publish(topic, json.dumps({"t": time.time(), "hex": bytes(data).hex()}), qos=1)
        return on_notification

    available = {c.uuid for s in client.services for c in s.characteristics}
    for short in CHARACTERISTICS:
        if uuid16(short) in available:
            await client.start_notify(uuid16(short), handler(short))
    await client.write_gatt_char(uuid16(START), b"\x01" + struct.pack("<I", int(time.time())), response=True)
    return client


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--devices", type=int, required=True)
    args = parser.parse_args()

    client_mqtt = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="peer-forwarder",
                              protocol=mqtt.MQTTv5)
    client_mqtt.connect("127.0.0.1", args.port)
    client_mqtt.loop_start()
    seen = set()
    clients = []
    for k in range(1, args.devices + 1):
        clients.append(await forward(address(k), client_mqtt, seen))
    while len(seen) < args.devices:
        await asyncio.sleep(0.1)
    print(f"streaming {args.devices}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    for client in clients:
        try:
            await client.disconnect()
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
    client_mqtt.loop_stop()
    client_mqtt.disconnect()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as error:  # noqa: BLE001 - one line for the bench log
        print(f"peer_forwarder: {error}", file=sys.stderr)
        sys.exit(1)
