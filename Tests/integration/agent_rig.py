"""A rig for the agent's end-to-end tests: a private dbus-daemon, empalink-sim, mosquitto on a free loopback port,
an MQTT subscriber that records everything, a systemd-style NOTIFY_SOCKET, and empalinkd itself.

Every process is started here and ended here by PID (SIGTERM, then SIGKILL after 5 s); every wait is bounded.
"""
import csv
import json
import os
import pathlib
import pwd
import signal
import socket
import subprocess
import tempfile
import threading
import time

import paho.mqtt.client as mqtt

from conftest import bin_dir
from simrig import BUS_CONFIG

# A test run that dies (a crash, a kill, a runner's time limit) takes the processes it started with it: each gets
# SIGTERM when its parent goes (prctl PR_SET_PDEATHSIG, set by util-linux's setpriv before it execs the program; the
# PID stays the program's). The rig's own cleanup (`Rig.__exit__`) is the normal path.
DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "TERM"]


# Quick links and a fine streaming tick: the agent's t0 (arrival minus duration) then lands within a few ms of the
# simulator's truth, and wristbands connect in well under a second.
SCENARIO = """[timing]
connect_ms = 100
services_ms = 50
disconnect_ms = 50
tick_ms = 5
"""

PREFIX = "empalink"
AGENT = "e2e"


def address(k):
    """Simulated wristband k (1-based): its Bluetooth address (Docs/simulator.md)."""
    return f"00:07:80:A0:01:{k:02X}"


def serial(k):
    """Simulated wristband k (1-based): its serial."""
    return f"a001{k:02x}"


def hrs_address(k):
    """Simulated heart-rate strap k (its 1-based device index, after the E4s): its address (Docs/simulator.md)."""
    return f"A0:9E:1A:B0:01:{k:02X}"


def hrs_serial(k):
    """Simulated heart-rate strap k: its serial (the address's last three bytes)."""
    return f"b001{k:02x}"


def free_port():
    """A loopback TCP port nobody listens on now (bind port 0, let the kernel choose)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_busy(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def stop(process, sig=signal.SIGTERM, timeout=5):
    """Ends a process we started, by PID: `sig`, then SIGKILL after `timeout` s. Returns its exit code."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    return process.returncode


def wait_until(predicate, timeout, interval=0.05):
    """Polls `predicate` until it returns something truthy (returned) or `timeout` s pass (returns None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


class Message:
    """One received MQTT message: topic, raw payload, its JSON (or None), retain flag, arrival (monotonic), and the
    MQTT v5 content type (None when absent)."""

    def __init__(self, topic, payload, retain, arrival, content_type=None):
        self.topic = topic
        self.content_type = content_type
        self.payload = payload
        self.retain = retain
        self.arrival = arrival
        try:
            self.json = json.loads(payload)
        except (ValueError, RecursionError):  # RecursionError: deeply nested input (the hostile-flood tests)
            self.json = None

    def __repr__(self):
        return f"Message({self.topic!r}, {self.payload[:120]!r}, retain={self.retain})"


class Subscriber:
    """An MQTT v5 client on `P/#` that records every message; thread-safe reads."""

    def __init__(self, port, topic=f"{PREFIX}/#", name="e2e-subscriber"):
        self.messages = []
        self.lock = threading.Lock()
        self.subscribed = threading.Event()
        client_id = f"{name}-{os.getpid()}-{time.monotonic_ns()}"
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *args: self.subscribed.set()
        self.client.on_connect = lambda client, *args: client.subscribe(topic, qos=1)
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()
        if not self.subscribed.wait(10):
            self.close()
            raise RuntimeError(f"MQTT subscriber could not subscribe on port {port}")

    def _on_message(self, client, userdata, message):
        content_type = getattr(message.properties, "ContentType", None) if message.properties else None
        entry = Message(message.topic, message.payload.decode("utf-8", "replace"), bool(message.retain),
                        time.monotonic(), content_type)
        with self.lock:
            self.messages.append(entry)

    def all(self, topic=None):
        with self.lock:
            return [m for m in self.messages if topic is None or m.topic == topic]

    def wait_for(self, predicate, timeout):
        """The first message satisfying `predicate` (now or within `timeout` s), else None."""
        def find():
            for message in self.all():
                if predicate(message):
                    return message
            return None
        return wait_until(find, timeout)

    def publish(self, topic, payload):
        info = self.client.publish(topic, payload, qos=1)
        info.wait_for_publish(timeout=5)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


class NotifySocket:
    """A systemd-style NOTIFY_SOCKET: an AF_UNIX datagram socket whose messages are recorded with arrival times."""

    def __init__(self, path):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages = []
        self.lock = threading.Lock()
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while self.running:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.messages.append((time.monotonic(), data.decode("utf-8", "replace")))

    def all(self):
        with self.lock:
            return list(self.messages)

    def lines(self, key):
        """(arrival, line) for every `KEY=...` line received, in order."""
        return [(t, line) for t, text in self.all() for line in text.split("\n") if line.startswith(key + "=")]

    def close(self):
        self.running = False
        self.thread.join(timeout=2)
        self.sock.close()


class Rig:
    """dbus-daemon + empalink-sim + mosquitto + subscriber, and empalinkd on demand. Use as a context manager."""

    def __init__(self, devices=3, seed=7, notify=False, scenario=SCENARIO, broker_extra="", hrs=0, adapters=1):
        self.scenario = scenario
        # Adapters of the simulated board (`empalink-sim --adapters`): hci0 … hci(N-1).
        self.adapters = adapters
        self.broker_extra = broker_extra
        self.bin = bin_dir()
        for name in ("empalinkd", "empalinkctl", "empalink-sim"):
            if not (self.bin / name).exists():
                raise RuntimeError(f"{self.bin / name} is missing: run `make build` first (or set EMPALINK_BIN)")
        self.devices = devices
        # Heart-rate straps after the E4s: devices `devices + 1 … devices + hrs` (`empalink-sim --hrs`).
        self.hrs = hrs
        self.seed = seed
        self.want_notify = notify
        self.processes = []
        self.agent = None
        self.agent_log = None
        self.sim = None
        self.subscriber = None
        self.notify = None
        self.tmpdir = None

    # MARK: lifetime

    def __enter__(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="empalink-e2e-")
        self.tmp = pathlib.Path(self.tmpdir.name)
        try:
            self._start_bus()
            self._start_sim()
            self._start_broker()
            self.subscriber = Subscriber(self.port)
            self._make_key()
            if self.want_notify:
                self.notify = NotifySocket(self.tmp / "notify")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        # Every step runs even when an earlier one raised: a failing test still stops all it started.
        steps = [lambda: stop(self.agent) if self.agent is not None else None,
                 lambda: self.subscriber.close() if self.subscriber is not None else None]
        steps += [lambda process=process: stop(process) for process in reversed(self.processes)]
        steps += [lambda: self.notify.close() if self.notify is not None else None,
                  lambda: self.agent_log.close() if self.agent_log is not None else None,
                  self.tmpdir.cleanup]
        errors = []
        for step in steps:
            try:
                step()
            except Exception as error:  # noqa: BLE001 - reported below, after the rest is stopped
                errors.append(error)
        if errors and exc[0] is None:
            raise errors[0]
        return False

    def _spawn(self, args, log_name, **kwargs):
        log = open(self.tmp / log_name, "w")
        process = subprocess.Popen(DIE_WITH_PARENT + [str(a) for a in args], stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, **kwargs)
        log.close()
        self.processes.append(process)
        return process

    def _start_bus(self):
        bus_socket = self.tmp / "bus"
        (self.tmp / "bus.conf").write_text(BUS_CONFIG.format(socket=bus_socket))
        self._spawn(["dbus-daemon", f"--config-file={self.tmp / 'bus.conf'}", "--nofork", "--nopidfile"], "dbus.log")
        if not wait_until(bus_socket.exists, 10):
            raise RuntimeError("dbus-daemon did not create its socket")
        self.bus_address = f"unix:path={bus_socket}"

    def _start_sim(self):
        (self.tmp / "scenario.toml").write_text(self.scenario)
        self.truth = self.tmp / "truth"
        self.sim = self._spawn([str(self.bin / "empalink-sim"), "--bus", self.bus_address,
                                "--devices", str(self.devices), "--hrs", str(self.hrs), "--seed", str(self.seed),
                                "--scenario", str(self.tmp / "scenario.toml"), "--truth", str(self.truth),
                                "--log-level", "warn"]
                               + (["--adapters", str(self.adapters)] if self.adapters != 1 else []), "sim.log")

        def ready():
            if self.sim.poll() is not None:
                raise RuntimeError(f"empalink-sim exited: {(self.tmp / 'sim.log').read_text()}")
            return self.sim_call("Stats", timeout=2).returncode == 0
        if not wait_until(ready, 10, interval=0.1):
            raise RuntimeError("org.empalink.Simulator did not appear")

    def sim_call(self, method, *args, timeout=5):
        """Calls org.empalink.Simulator1.METHOD with typed dbus-send arguments (e.g. 'string:a00101')."""
        return subprocess.run(["dbus-send", f"--bus={self.bus_address}", "--print-reply",
                               "--dest=org.empalink.Simulator", "/org/empalink/simulator",
                               f"org.empalink.Simulator1.{method}", *args],
                              capture_output=True, text=True, timeout=timeout)

    def sim_stats(self):
        """The simulator's Stats() as plain Python values (busctl's JSON, unwrapped)."""
        result = subprocess.run(["busctl", f"--address={self.bus_address}", "--json=short", "call",
                                 "org.empalink.Simulator", "/org/empalink/simulator", "org.empalink.Simulator1",
                                 "Stats"], capture_output=True, text=True, timeout=5)
        if result.returncode != 0:
            raise RuntimeError(f"Stats failed: {result.stderr}")

        def unwrap(value):
            if isinstance(value, dict) and set(value) == {"type", "data"}:
                return unwrap(value["data"])
            if isinstance(value, dict):
                return {key: unwrap(item) for key, item in value.items()}
            return value
        return unwrap(json.loads(result.stdout)["data"][0])

    def _start_broker(self):
        self.port = free_port()
        (self.tmp / "mosquitto.conf").write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
            # Run as ourselves: mosquitto started as root otherwise switches to its own user, and a change of
            # credentials clears the parent-death signal (DIE_WITH_PARENT).
            f"user {pwd.getpwuid(os.geteuid()).pw_name}\n{self.broker_extra}")
        broker = self._spawn(["mosquitto", "-c", str(self.tmp / "mosquitto.conf")], "mosquitto.log")

        def listening():
            if broker.poll() is not None:
                raise RuntimeError(f"mosquitto exited: {(self.tmp / 'mosquitto.log').read_text()}")
            return port_busy(self.port)
        if not wait_until(listening, 10):
            raise RuntimeError("mosquitto did not listen")

    def _make_key(self):
        self.keyring = self.tmp / "keyring.toml"
        result = subprocess.run([str(self.bin / "empalinkctl"), "key", "add", "--devices", "*",
                                 "--keyring", str(self.keyring)], capture_output=True, text=True, timeout=20)
        if result.returncode != 0 or not result.stdout.strip():
            raise RuntimeError(f"empalinkctl key add failed: {result.stderr}")
        self.key_file = self.tmp / "api-key"
        self.key_file.write_text(result.stdout.strip().splitlines()[0] + "\n")

    # MARK: the agent

    @property
    def config_path(self):
        return self.tmp / "empalinkd.toml"

    @property
    def control_socket(self):
        return self.tmp / "control.sock"

    def config_text(self, whitelist, batch_ms=200, background_batch_ms=1000, metrics_interval_s=1,
                    mqtt_commands=True, extra="", straps=(), bvp="raw"):
        """A complete agent configuration; `whitelist` is a list of E4 device indexes (1-based), `straps` one of
        heart-rate strap entries: device indexes, or (index, id) to publish under that id. `bvp`: `publish.bvp`,
        "raw" so that published samples can be compared with the simulator's truth; None leaves the default
        (filtered)."""
        bands = "".join(f'\n[[wristband]]\nserial = "{serial(k)}"\nlabel = "bed {k}"\n' for k in whitelist)
        for strap in straps:
            k, topic_id = strap if isinstance(strap, tuple) else (strap, None)
            bands += f'\n[[wristband]]\naddress = "{hrs_address(k)}"\nprofile = "hrs"\nlabel = "strap {k}"\n'
            bands += f'id = "{topic_id}"\n' if topic_id else ""

        return f"""[agent]
id = "{AGENT}"
log_level = "info"
control_socket = "{self.control_socket}"

[auth]
api_key_file = "{self.key_file}"
keyring = "{self.keyring}"

[bluetooth]
adapter = "hci0"
mode = "active"
reconnect_initial_s = 1
{bands}
[mqtt]
host = "127.0.0.1"
port = {self.port}
protocol = "5"
qos = 1
topic_prefix = "{PREFIX}"

[publish]
batch_ms = {batch_ms}
{f'bvp = "{bvp}"' if bvp else ""}
background_batch_ms = {background_batch_ms}
metrics_interval_s = {metrics_interval_s}

[spool]
dir = "{self.tmp / 'spool'}"

[control]
mqtt_commands = {"true" if mqtt_commands else "false"}
{extra}"""

    def start_agent(self, config_text, watchdog_usec=None):
        """Writes the configuration and starts empalinkd; returns the process once its status says online."""
        self.config_path.write_text(config_text)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus_address)
        for name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"):
            env.pop(name, None)
        if self.notify is not None:
            env["NOTIFY_SOCKET"] = self.notify.path
            if watchdog_usec is not None:
                # libsystemd's sd_watchdog_enabled(): WATCHDOG_PID unset means "this process".
                env["WATCHDOG_USEC"] = str(watchdog_usec)
        self.agent_log_path = self.tmp / "empalinkd.log"
        self.agent_log = open(self.agent_log_path, "w")
        command = [str(self.bin / "empalinkd"), "--config", str(self.config_path)]
        self.agent = subprocess.Popen(DIE_WITH_PARENT + command,
                                      stdout=self.agent_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env=env)
        online = self.subscriber.wait_for(
            lambda m: m.topic == self.topic("status") and m.json and m.json.get("state") == "online", 20)
        if online is None:
            raise RuntimeError(f"empalinkd did not publish online status: {self.agent_log_text()}")
        return self.agent

    def agent_log_text(self):
        try:
            return self.agent_log_path.read_text()
        except OSError:
            return ""

    def topic(self, *parts):
        return "/".join((PREFIX, AGENT) + parts)

    def ctl(self, *args, timeout=10):
        return subprocess.run([str(self.bin / "empalinkctl"), *args], capture_output=True, text=True,
                              timeout=timeout)

    def device_status(self, k):
        """The latest `P/A/S/status` payload of device k, or None."""
        messages = self.subscriber.all(self.topic(serial(k), "status"))
        return messages[-1].json if messages else None

    def wait_connected(self, k, timeout=20):
        return wait_until(lambda: (self.device_status(k) or {}).get("status") == "connected", timeout)

    def retained(self, topic_filter, settle=1.0):
        """The retained messages a fresh subscriber gets for `topic_filter` (as `Message`s with retain set)."""
        late = Subscriber(self.port, topic=topic_filter, name="e2e-late")
        try:
            time.sleep(settle)
            return [m for m in late.all() if m.retain]
        finally:
            late.close()

    def stop_sim(self):
        """SIGTERM the simulator (it then flushes its truth files); returns its exit code."""
        return stop(self.sim)

    def read_truth(self, k, name, device_serial=None):
        with open(self.truth / (device_serial or serial(k)) / f"{name}.csv") as f:
            return list(csv.DictReader(f))


# MARK: JSON Schemas of the MQTT contract (SPEC §10)

_NUMBER = {"type": "number"}
_TIME = {"type": "number", "minimum": 1e9}
_SID = {"type": "string", "pattern": "^[0-9A-Za-z_-]{8,64}$"}
_SEQ = {"type": "integer", "minimum": 0}


def _sampled(values, fs):
    return {
        "type": "object",
        "required": ["sid", "seq", "t", "fs", "v"],
        "additionalProperties": False,
        "properties": {"sid": _SID, "seq": _SEQ, "t": _TIME, "fs": {"const": fs},
                       "v": {"type": "array", "minItems": 1, "items": values}},
    }


def _events(item):
    return {
        "type": "object",
        "required": ["sid", "seq", "v"],
        "additionalProperties": False,
        "properties": {"sid": _SID, "seq": _SEQ, "v": {"type": "array", "minItems": 1, "items": item}},
    }


def _pair(value):
    return {"type": "array", "prefixItems": [_TIME, value], "minItems": 2, "maxItems": 2}


_INT8 = {"type": "integer", "minimum": -128, "maximum": 127}
_COUNT = {"type": "integer", "minimum": 0}

SCHEMAS = {
    "status": {
        "oneOf": [
            {"type": "object", "required": ["state", "version", "mode", "clock_synced"],
             "properties": {"state": {"const": "online"}, "version": {"type": "string", "minLength": 1},
                            "mode": {"enum": ["active", "background"]}, "clock_synced": {"type": "boolean"}}},
            {"type": "object", "required": ["state"], "additionalProperties": False,
             "properties": {"state": {"const": "offline"}}},
        ],
    },
    "devices": {
        "type": "object",
        "propertyNames": {"pattern": "^[A-Za-z0-9._-]{1,64}$"},
        "additionalProperties": {
            "type": "object", "required": ["address", "name", "rssi", "allowed"],
            "properties": {"address": {"type": "string", "pattern": "^([0-9A-F]{2}:){5}[0-9A-F]{2}$"},
                           "name": {"type": "string"}, "rssi": {"type": ["integer", "null"]},
                           "allowed": {"type": "boolean"}},
        },
    },
    "device_status": {
        "type": "object",
        "required": ["status", "address", "label", "rssi", "battery", "since"],
        "properties": {
            "status": {"enum": ["connected", "connecting", "disconnecting", "disconnected"]},
            "address": {"type": "string", "pattern": "^([0-9A-F]{2}:){5}[0-9A-F]{2}$"},
            "label": {"type": "string"}, "rssi": {"type": ["integer", "null"]},
            "battery": {"oneOf": [{"type": "null"}, {"type": "number", "minimum": 0, "maximum": 1}]},
            "since": {"oneOf": [{"type": "null"}, _TIME]},
            "sid": _SID,
        },
        "if": {"properties": {"status": {"const": "connected"}}},
        "then": {"required": ["sid"], "properties": {"since": _TIME}},
    },
    "bvp": _sampled(_NUMBER, 64),
    "gsr": _sampled({"type": "number", "minimum": 0}, 4),
    "temp": _sampled({"type": "number", "minimum": -40, "maximum": 80}, 4),
    "acc": _sampled({"type": "array", "items": _INT8, "minItems": 3, "maxItems": 3}, 32),
    "ibi": _events(_pair({"type": "number", "exclusiveMinimum": 0.2, "exclusiveMaximum": 2.5})),
    # SPEC §10 `[[t,bpm],…]`, plus one source per message and a confidence per value (issue #18).
    "hr": {
        "type": "object",
        "required": ["sid", "seq", "source", "v", "confidence"],
        "additionalProperties": False,
        "properties": {"sid": _SID, "seq": _SEQ, "source": {"enum": ["beats", "spectral", "device"]},
                       "v": {"type": "array", "minItems": 1,
                             "items": _pair({"type": "number", "minimum": 24, "maximum": 300})},
                       "confidence": {"type": "array", "minItems": 1,
                                      "items": {"type": "number", "minimum": 0, "maximum": 1}}},
    },
    "battery": _events(_pair({"type": "number", "minimum": 0, "maximum": 1})),
    "tag": _events(_TIME),
    "contact": _events(_pair({"enum": [0, 1]})),
    "metrics": {
        "type": "object",
        "required": ["uptime_s", "mode", "devices", "mqtt", "spool"],
        "properties": {
            "uptime_s": {"type": "number", "minimum": 0},
            "mode": {"enum": ["active", "background"]},
            "clock_synced": {"type": "boolean"},
            "devices": {
                "type": "object",
                "propertyNames": {"pattern": "^[A-Za-z0-9._-]{1,64}$"},
                "additionalProperties": {
                    "type": "object", "required": ["rx_packets", "lost", "decode_errors", "reconnects", "rssi"],
                    "properties": {"rx_packets": _COUNT, "lost": _COUNT, "decode_errors": _COUNT,
                                   "reconnects": _COUNT, "notify_acquired": _COUNT, "notify_fallbacks": _COUNT,
                                   "rssi": {"type": ["integer", "null"]}},
                },
            },
            "mqtt": {"type": "object", "required": ["published", "acked", "inflight"],
                     "properties": {"published": _COUNT, "acked": _COUNT, "inflight": _COUNT}},
            "spool": {"type": "object", "required": ["enabled", "bytes", "records", "dropped", "oldest_t"],
                      "properties": {"enabled": {"type": "boolean"}, "bytes": _COUNT, "records": _COUNT,
                                     "dropped": _COUNT, "oldest_t": {"type": ["number", "null"]}}},
        },
    },
    "cmd_result": {
        "oneOf": [
            {"type": "object", "required": ["ok", "command", "result"], "additionalProperties": False,
             "properties": {"ok": {"const": True}, "command": {"type": "object", "minProperties": 1,
                                                               "maxProperties": 1},
                            "result": {"type": "string", "minLength": 1}}},
            {"type": "object", "required": ["ok", "error"], "additionalProperties": False,
             "properties": {"ok": {"const": False}, "error": {"type": "string", "minLength": 1}}},
        ],
    },
}

DEVICE_STREAMS = ("bvp", "gsr", "temp", "acc", "ibi", "hr", "battery", "tag", "contact")
# What an E4 publishes: all but a heart-rate sensor's `contact`.
E4_STREAMS = tuple(stream for stream in DEVICE_STREAMS if stream != "contact")


def schema_for(topic):
    """The schema name for a topic under P/A (None for a topic outside the contract)."""
    parts = topic.split("/")
    if parts[:2] != [PREFIX, AGENT]:
        return None
    rest = parts[2:]
    if rest in (["status"], ["devices"], ["metrics"]):
        return rest[0]
    if rest == ["cmd", "result"]:
        return "cmd_result"
    if rest == ["cmd"]:
        return None
    if len(rest) == 2 and rest[1] == "status":
        return "device_status"
    if len(rest) == 2 and rest[1] in DEVICE_STREAMS:
        return rest[1]
    return "unknown"
