"""Issue 22, fleet mode in the agent (SPEC §18, Docs/fleet.md "In the agent"): one empalinkd with
`[fleet] enabled = true` against the normal simulator and a real mosquitto. The test plays the other boards by
publishing their retained leases, presence and sightings itself.

Checks: retained presence online and its Last Will after `kill -9`; a free wristband claimed, held, connected only
after `held`, renewed every ~2 s, with retained 6 s sightings before; a foreign live lease keeps the agent off its
wristband; a higher epoch fences the holder within ~1 s; SIGHUP keeps working (fleet off waits for a restart);
SIGTERM releases and says offline; after a broker restart the will carries the new session; fleet off publishes
nothing under `P/fleet/`.
"""
import json
import os
import signal
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from agent_rig import AGENT, PREFIX, Rig, serial, stop, wait_until

FLEET = f"{PREFIX}/fleet"
FLEET_ON = "\n[fleet]\nenabled = true\n"


class FleetWatch:
    """An MQTT 5 client on `P/fleet/#` (retain as published) that records topic, payload, retain flag and message
    expiry of every message, and publishes what the other boards of the ward would."""

    def __init__(self, port):
        self.messages = []
        self.lock = threading.Lock()
        subscribed = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"fleet-watch-{os.getpid()}",
                                  protocol=mqtt.MQTTv5)
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *args: subscribed.set()
        self.client.on_connect = lambda client, *args: client.subscribe(
            f"{FLEET}/#", options=SubscribeOptions(qos=1, retainAsPublished=True))
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()
        assert subscribed.wait(10), "the fleet watcher could not subscribe"

    def _on_message(self, client, userdata, message):
        properties = message.properties
        expiry = getattr(properties, "MessageExpiryInterval", None) if properties else None
        payload = message.payload.decode("utf-8", "replace")
        entry = {"topic": message.topic, "payload": payload, "json": json.loads(payload) if payload else None,
                 "retain": bool(message.retain), "expiry": expiry, "t": time.monotonic()}
        with self.lock:
            self.messages.append(entry)

    def all(self, topic):
        with self.lock:
            return [m for m in self.messages if m["topic"] == topic]

    def wait_for(self, topic, predicate, timeout, since=0.0):
        def find():
            return next((m for m in self.all(topic) if m["t"] >= since and predicate(m)), None)
        return wait_until(find, timeout)

    def publish(self, topic, document, expiry=None):
        properties = None
        if expiry is not None:
            properties = mqtt.Properties(mqtt.PacketTypes.PUBLISH)
            properties.MessageExpiryInterval = expiry
        self.client.publish(topic, json.dumps(document), qos=1, retain=True, properties=properties).wait_for_publish(5)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


def lease(holder, epoch, state="held", score=-50.0):
    return {"v": 1, "holder": holder, "epoch": epoch, "state": state, "ttl": 6, "score": score}


def test_fleet_lease_fencing_shutdown_and_will():
    with Rig(devices=3) as rig:
        watch = FleetWatch(rig.port)
        stop_renewing = threading.Event()
        foreign = f"{FLEET}/lease/{serial(2)}"

        def board_zz():
            # Another board, `zz`, holds wristband 2 (epoch 5) and hears it better than anyone: it renews its lease
            # and its sighting every 2 s, as a live holder does.
            while not stop_renewing.is_set():
                try:
                    board_zz_once()
                except (RuntimeError, ValueError):  # the broker restart below: publishing fails until it is back
                    pass
                stop_renewing.wait(2)

        def board_zz_once():
            watch.publish(f"{FLEET}/board/zz", {"v": 1, "online": True, "session": 1,
                                                "adapters": [{"name": "hci0", "capacity": 3, "free": 2}]})
            watch.publish(foreign, lease("zz", 5))
            watch.publish(f"{FLEET}/seen/{serial(2)}/zz", {"v": 1, "rssi": -20.0, "free": 2}, expiry=6)

        renewer = threading.Thread(target=board_zz, daemon=True)
        renewer.start()
        try:
            assert watch.wait_for(foreign, lambda m: m["json"]["holder"] == "zz", 5)
            started = time.monotonic()
            agent = rig.start_agent(rig.config_text([1, 2, 3], extra=FLEET_ON))
            presence = f"{FLEET}/board/{AGENT}"

            # (a) Retained presence online.
            online = watch.wait_for(presence, lambda m: m["json"] and m["json"]["online"], 10)
            assert online, rig.agent_log_text()
            assert online["retain"]

            # (b) Sightings of the free wristbands, retained with a 6 s expiry, while not connected.
            sighting = watch.wait_for(f"{FLEET}/seen/{serial(1)}/{AGENT}", lambda m: m["json"] is not None, 8)
            assert sighting, rig.agent_log_text()
            assert sighting["retain"] and sighting["expiry"] == 6, sighting
            assert -127 <= sighting["json"]["rssi"] <= 20

            # Claimed, then held (after the 10 s grace and the 2 s settle), connected only after held.
            own = {k: f"{FLEET}/lease/{serial(k)}" for k in (1, 3)}
            for k in (1, 3):
                claimed = watch.wait_for(own[k], lambda m: m["json"] and m["json"]["holder"] == AGENT
                                         and m["json"]["state"] == "claimed", 20)
                assert claimed, rig.agent_log_text()
                held = watch.wait_for(own[k], lambda m: m["json"] and m["json"]["holder"] == AGENT
                                      and m["json"]["state"] == "held", 5)
                assert held and held["retain"]
                assert held["t"] - claimed["t"] >= 1.5
                assert rig.wait_connected(k, 10), rig.agent_log_text()
                connected = rig.subscriber.wait_for(lambda m: m.topic == rig.topic(serial(k), "status")
                                                    and (m.json or {}).get("status") == "connected", 1)
                statuses = [m for m in rig.subscriber.all(rig.topic(serial(k), "status"))
                            if (m.json or {}).get("status") in ("connecting", "connected")]
                assert statuses[0].arrival >= held["t"] - 0.2, "connecting before the lease was held"
                assert connected.arrival >= held["t"] - 0.2
            epoch = held["json"]["epoch"]

            # Renewed about every 2 s.
            time.sleep(4.5)
            renewals = [m["t"] for m in watch.all(own[1]) if m["json"] and m["json"]["state"] == "held"]
            gaps = [b - a for a, b in zip(renewals, renewals[1:])]
            assert len(gaps) >= 2 and all(1.5 <= gap <= 2.8 for gap in gaps), gaps

            # (c) The foreign live lease kept the agent off wristband 2: never connected, never claimed.
            assert not [m for m in watch.all(foreign) if m["json"] and m["json"]["holder"] == AGENT]
            assert not [m for m in rig.subscriber.all(rig.topic(serial(2), "status"))
                        if (m.json or {}).get("status") in ("connecting", "connected")]
            assert (rig.device_status(2) or {}).get("status") in (None, "disconnected")

            # (d) Fencing: another board's lease of a higher epoch makes the holder disconnect at once.
            fenced_at = time.monotonic()
            watch.publish(own[1], lease("zy", epoch + 1))
            assert wait_until(lambda: (rig.device_status(1) or {}).get("status") in ("disconnecting", "disconnected"),
                              1.5), rig.agent_log_text()
            assert time.monotonic() - fenced_at <= 1.5
            assert not watch.wait_for(own[1], lambda m: m["json"] and m["json"]["holder"] == AGENT, 0.5,
                                      since=fenced_at)
            assert (rig.device_status(3) or {}).get("status") == "connected"

            # The counters reach the metrics.
            metrics = rig.subscriber.wait_for(lambda m: m.topic == rig.topic("metrics") and m.arrival > fenced_at
                                              and (m.json or {}).get("fleet", {}).get("counters", {}).get("fenced"),
                                              3)
            assert metrics, "no fleet counters in the metrics"
            assert metrics.json["fleet"]["counters"]["acquired"] >= 2

            # SIGHUP keeps working; turning fleet mode off waits for a restart, and the held lease goes on.
            rig.config_path.write_text(rig.config_text([1, 2, 3]))
            hup_at = time.monotonic()
            agent.send_signal(signal.SIGHUP)
            assert wait_until(lambda: "changes to [fleet] take effect after a restart" in rig.agent_log_text(), 3)
            assert watch.wait_for(own[3], lambda m: m["json"] and m["json"]["holder"] == AGENT
                                  and m["json"]["state"] == "held", 3, since=hup_at)
            assert agent.poll() is None

            # (f) SIGTERM: the held lease released, presence offline, exit 0 within 5 s.
            term_at = time.monotonic()
            agent.send_signal(signal.SIGTERM)
            assert agent.wait(5) == 0
            assert watch.wait_for(own[3], lambda m: m["json"] and m["json"]["holder"] == AGENT
                                  and m["json"]["state"] == "released", 2, since=term_at), rig.agent_log_text()
            offline = watch.wait_for(presence, lambda m: m["json"] and not m["json"]["online"], 2, since=term_at)
            assert offline and offline["retain"]
            assert not watch.all(presence)[-1]["json"]["online"], "presence online again after the offline one"

            # (a) The will: a new run says online in a later session; after kill -9 the broker says offline for it.
            restart_at = time.monotonic()
            agent = rig.start_agent(rig.config_text([1, 2, 3], extra=FLEET_ON))
            online = watch.wait_for(presence, lambda m: m["json"] and m["json"]["online"], 10, since=restart_at)
            assert online and online["json"]["session"] > offline["json"]["session"]
            # A broker restart: the agent reconnects in a new session, and the will registered for the new
            # connection carries it (it is registered again before every connection).
            broker = next(p for p in rig.processes if "mosquitto" in " ".join(p.args))
            stop(broker)
            rig.processes.remove(broker)
            restarted_at = time.monotonic()
            rig._spawn(["mosquitto", "-c", str(rig.tmp / "mosquitto.conf")], "mosquitto-2.log")
            online = watch.wait_for(presence, lambda m: m["json"] and m["json"]["online"]
                                    and m["json"]["session"] > online["json"]["session"], 15, since=restarted_at)
            assert online, rig.agent_log_text()
            killed_at = time.monotonic()
            agent.kill()
            agent.wait(5)
            will = watch.wait_for(presence, lambda m: m["json"] and not m["json"]["online"], 5, since=killed_at)
            assert will, "no Last Will after kill -9"
            assert will["retain"] and will["json"]["session"] == online["json"]["session"]
            assert time.monotonic() - started < 60
        finally:
            stop_renewing.set()
            renewer.join(5)
            watch.close()


def test_fleet_off_publishes_nothing_under_fleet():
    with Rig(devices=1) as rig:
        watch = FleetWatch(rig.port)
        try:
            rig.start_agent(rig.config_text([1]))
            assert rig.wait_connected(1, 10), rig.agent_log_text()
            metrics = rig.subscriber.wait_for(lambda m: m.topic == rig.topic("metrics"), 3)
            assert metrics and "fleet" not in metrics.json
            time.sleep(1)
            assert not watch.messages
            assert not [m for m in rig.subscriber.all() if m.topic.startswith(FLEET + "/")]
            stop(rig.agent)
        finally:
            watch.close()
