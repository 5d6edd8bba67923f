"""The rig of the fault tests (issue 7): a private D-Bus bus, empalink-sim, a stoppable mosquitto, empalinkd and
an MQTT subscriber, all real processes.

Every process is started here, remembered, and ended by its PID (SIGTERM, then SIGKILL after a bounded wait);
every wait has a deadline, so a broken agent fails a test instead of hanging it. Kept apart from the other
integration helpers on purpose: these tests stop brokers and kill agents, and own their fixtures.
"""
import json
import os
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import zlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""
PREFIX = "empalink"
DATA_STREAMS = ("bvp", "gsr", "acc", "temp", "ibi", "hr", "battery", "tag")


def bin_dir() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("EMPALINK_BIN", ROOT / ".build" / "debug"))
    for name in ("empalinkd", "empalinkctl", "empalink-sim"):
        if not (path / name).exists():
            pytest.fail(f"{path / name} is missing: run `make build` first (or set EMPALINK_BIN)")
    return path


def serial(index: int) -> str:
    """The simulator's stable serial of device `index` (1-based), Docs/simulator.md."""
    return f"a001{index:02x}"


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05):
    """Polls `predicate` until it returns something truthy; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False



def control_request(path, line: str = "status", timeout: float = 2.0):
    """One request on an agent's control socket at `path`: the parsed JSON answer, or None when it does not answer."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(str(path))
            client.sendall(line.encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = client.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)
    except (OSError, ValueError):
        return None


class Processes:
    """Everything a test started; ended newest first, each by its PID, with bounded waits."""

    def __init__(self):
        self.running = []

    def start(self, args, *, log=None, env=None):
        out = open(log, "ab") if log else subprocess.DEVNULL
        process = subprocess.Popen([str(a) for a in args], stdout=out, stderr=out, env=env,
                                   stdin=subprocess.DEVNULL)
        if log:
            out.close()
        self.running.append(process)
        return process

    @staticmethod
    def stop(process, timeout: float = 8.0):
        """SIGTERM, then SIGKILL after `timeout` s; returns the exit code."""
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        return process.returncode

    def stop_all(self):
        for process in reversed(self.running):
            self.stop(process)
        self.running.clear()


class Bus:
    """A private session-type dbus-daemon on which the simulator may own org.bluez."""

    def __init__(self, processes: Processes, work: pathlib.Path):
        self.socket = work / "bus"
        (work / "bus.conf").write_text(BUS_CONFIG.format(socket=self.socket))
        self.process = processes.start(["dbus-daemon", f"--config-file={work / 'bus.conf'}", "--nofork",
                                        "--nopidfile"])
        wait_until(self.socket.exists, 10, "dbus-daemon's socket")
        self.address = f"unix:path={self.socket}"


class Simulator:
    """empalink-sim with `devices` wristbands on the bus; ready once org.bluez answers."""

    def __init__(self, processes: Processes, bus: Bus, work: pathlib.Path, devices: int = 3, seed: int = 7,
                 scenario=None):
        self.bus = bus
        self.log = work / "sim.log"
        args = [bin_dir() / "empalink-sim", "--bus", bus.address, "--devices", devices, "--seed", seed,
                "--log-level", "warn"]
        if scenario:
            args += ["--scenario", scenario]
        self.process = processes.start(args, log=self.log)

        def answers():
            assert self.process.poll() is None, f"empalink-sim exited: {self.log.read_text()}"
            probe = subprocess.run(["dbus-send", f"--bus={bus.address}", "--print-reply", "--dest=org.bluez", "/",
                                    "org.freedesktop.DBus.ObjectManager.GetManagedObjects"],
                                   capture_output=True, timeout=5)
            return probe.returncode == 0

        wait_until(answers, 15, "org.bluez from empalink-sim", interval=0.1)


class Broker:
    """mosquitto on a fixed loopback port, stoppable and restartable on that same port.

    Persistence is on so that the subscriber's session (clean_session false, QoS 1) and the messages queued for
    it survive a broker restart: without it, whatever the agent replays between the broker's return and the
    subscriber's reconnect would be lost to the test, not to the agent.
    """

    def __init__(self, processes: Processes, work: pathlib.Path, port: int = None):
        self.processes = processes
        self.work = work
        self.port = port or free_port()
        self.process = None
        self.starts = 0
        (work / "mosquitto").mkdir(exist_ok=True)
        self.config = work / "mosquitto.conf"
        self.config.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
            f"persistence true\npersistence_location {work / 'mosquitto'}/\nautosave_interval 0\n"
            "max_queued_messages 0\nmax_queued_bytes 0\nmax_inflight_messages 100\n"
            # As root, mosquitto drops to its own user, which may not write the private work directory.
            + ("user root\n" if os.geteuid() == 0 else "")
            + "log_dest stderr\nlog_type error\nlog_type warning\n")

    def start(self):
        assert self.process is None or self.process.poll() is not None
        self.starts += 1
        self.process = self.processes.start(["mosquitto", "-c", self.config], log=self.work / "mosquitto.log")
        wait_until(lambda: port_open(self.port) or self.process.poll() is not None, 10, "mosquitto's port")
        assert self.process.poll() is None, (self.work / "mosquitto.log").read_text()

    def stop(self):
        """Stops the broker (SIGTERM: it saves the persistent sessions) and waits until its port is closed."""
        code = Processes.stop(self.process)
        self.processes.running.remove(self.process)
        wait_until(lambda: not port_open(self.port), 10, "mosquitto's port to close")
        # Without its saved sessions the subscriber would miss what arrives before it resubscribes.
        assert (self.work / "mosquitto" / "mosquitto.db").exists(), \
            f"mosquitto saved no persistence file: {(self.work / 'mosquitto.log').read_text()}"
        return code


class Subscriber:
    """A paho-mqtt subscriber to `empalink/#` with a persistent session; records every message it receives.

    `messages` holds (monotonic arrival time, wall-clock arrival time, topic, payload bytes) in arrival order.
    """

    def __init__(self, broker: Broker, client_id: str = "faults-subscriber"):
        import paho.mqtt.client as mqtt

        self.lock = threading.Lock()
        self.messages = []
        self.connected = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=False,
                                  protocol=mqtt.MQTTv311)
        self.client.max_inflight_messages_set(100)
        self.client.reconnect_delay_set(min_delay=1, max_delay=1)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = lambda *args: self.connected.clear()
        self.client.on_message = self._on_message
        self.client.connect_async("127.0.0.1", broker.port, keepalive=30)
        self.client.loop_start()
        assert self.connected.wait(10), "the subscriber did not connect"

    def _on_connect(self, client, userdata, flags, reason, properties):
        if not reason.is_failure:
            client.subscribe(PREFIX + "/#", qos=1)
            self.connected.set()

    def _on_message(self, client, userdata, message):
        with self.lock:
            self.messages.append((time.monotonic(), time.time(), message.topic, bytes(message.payload)))

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def count(self):
        with self.lock:
            return len(self.messages)

    def fence(self, broker_port: int, timeout: float = 10):
        """Publishes a marker and waits for it: everything the broker routed to us before it has arrived."""
        import paho.mqtt.publish as publish

        marker = f"{time.monotonic_ns()}".encode()
        publish.single(PREFIX + "/fence", marker, qos=1, hostname="127.0.0.1", port=broker_port)
        wait_until(lambda: any(m[2] == PREFIX + "/fence" and m[3] == marker for m in self.snapshot()[-200:]),
                   timeout, "the subscriber's fence marker")

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


class Agent:
    """empalinkd with a generated configuration; start, stop (SIGTERM), kill -9, status over the control socket."""

    def __init__(self, processes: Processes, work: pathlib.Path, *, broker_port: int, bus_address: str,
                 agent_id: str = "faults", devices: int = 3, spool_dir=None, spool: dict = None,
                 mqtt: dict = None, publish: dict = None, api_key: bool = True):
        self.processes = processes
        self.work = work
        self.agent_id = agent_id
        self.bus_address = bus_address
        self.spool_dir = pathlib.Path(spool_dir or work / "spool")
        self.control = work / "control.sock"
        self.config = work / "empalinkd.toml"
        self.process = None
        self.runs = 0
        lines = [
            "[agent]", f'id = "{agent_id}"', 'log_level = "info"', f'control_socket = "{self.control}"', "",
            "[auth]",
        ]
        if api_key:
            keyring = work / "keyring.toml"
            key_file = work / "api-key"
            if not key_file.exists():
                made = subprocess.run([bin_dir() / "empalinkctl", "key", "add", "--devices", "*", "--keyring",
                                       keyring], capture_output=True, text=True, timeout=30)
                assert made.returncode == 0, made.stderr
                key_file.write_text(made.stdout)
            lines += [f'api_key_file = "{key_file}"', f'keyring = "{keyring}"']
        lines += ["", "[bluetooth]", 'adapter = "hci0"', 'mode = "active"', "reconnect_max_s = 5", ""]
        for index in range(1, devices + 1):
            lines += ["[[wristband]]", f'serial = "{serial(index)}"', ""]
        mqtt_keys = {"host": '"127.0.0.1"', "port": broker_port, "protocol": '"5"', "topic_prefix": f'"{PREFIX}"',
                     "keepalive_s": 5}
        mqtt_keys.update(mqtt or {})
        publish_keys = {"batch_ms": 250, "metrics_interval_s": 1}
        publish_keys.update(publish or {})
        spool_keys = {"dir": f'"{self.spool_dir}"', "mode": '"offline"', "segment_bytes": 65536,
                      "max_bytes": 67108864, "fsync_interval_ms": 200}
        spool_keys.update(spool or {})
        for table, keys in (("mqtt", mqtt_keys), ("publish", publish_keys), ("spool", spool_keys)):
            lines.append(f"[{table}]")
            lines += [f"{key} = {value}" for key, value in keys.items()]
            lines.append("")
        self.config.write_text("\n".join(lines))
        check = subprocess.run([bin_dir() / "empalinkd", "--check-config", "--config", self.config],
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr

    @property
    def log(self) -> pathlib.Path:
        return self.work / f"empalinkd.{self.runs}.log"

    def start(self):
        assert self.process is None or self.process.poll() is not None
        self.runs += 1
        env = {key: value for key, value in os.environ.items() if key not in ("JOURNAL_STREAM", "NOTIFY_SOCKET")}
        env["DBUS_SYSTEM_BUS_ADDRESS"] = self.bus_address
        self.started = time.monotonic()
        self.process = self.processes.start([bin_dir() / "empalinkd", "--config", self.config], log=self.log,
                                            env=env)
        return self.process

    def request(self, line: str = "status", timeout: float = 2.0):
        """One control-socket request; the parsed JSON answer, or None when the agent does not answer."""
        return control_request(self.control, line, timeout)

    def status(self):
        assert self.process.poll() is None, f"empalinkd exited ({self.process.returncode}): {self.tail()}"
        return self.request("status")

    def wait_status(self, predicate=lambda s: True, timeout: float = 30, what: str = "the agent's status"):
        def check():
            status = self.status()
            return status if status is not None and predicate(status) else None
        return wait_until(check, timeout, what, interval=0.1)

    def wait_online(self, timeout: float = 30):
        return self.wait_status(lambda s: s.get("mqtt") == "connected", timeout, "MQTT online")

    def wait_streaming(self, devices: int, timeout: float = 60):
        return self.wait_status(
            lambda s: sum(d.get("status") == "connected" for d in s.get("devices", {}).values()) >= devices,
            timeout, f"{devices} wristbands connected")

    def stop(self, timeout: float = 8.0):
        code = Processes.stop(self.process, timeout)
        self.processes.running.remove(self.process)
        return code

    def kill9(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self.processes.running.remove(self.process)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def assert_no_trap(self, log=None):
        text = (log or self.log).read_text(errors="replace")
        for needle in ("Fatal error", "trap", "Trace/breakpoint", "Segmentation fault", "Illegal instruction"):
            assert needle not in text, f"{needle!r} in the agent's output:\n{text[-3000:]}"


def make_work(prefix: str) -> pathlib.Path:
    """A short temporary directory (the control socket path must fit in sun_path)."""
    return pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def remove_work(work: pathlib.Path):
    shutil.rmtree(work, ignore_errors=True)


# MARK: Messages


def data_messages(messages, agent_id: str = "faults"):
    """Yields (arrival, sid, stream, seq, message) for the data topics `P/A/S/<stream>` of `messages`."""
    for arrival, _, topic, payload in messages:
        parts = topic.split("/")
        if len(parts) != 4 or parts[0] != PREFIX or parts[1] != agent_id or parts[3] not in DATA_STREAMS:
            continue
        body = json.loads(payload)
        yield arrival, body["sid"], parts[3], body["seq"], body


def dedup(messages, agent_id: str = "faults"):
    """(sid, stream) → seqs in order of first arrival (duplicates by (sid, stream, seq) removed)."""
    seen = set()
    streams = {}
    for arrival, sid, stream, seq, _ in data_messages(messages, agent_id):
        if (sid, stream, seq) in seen:
            continue
        seen.add((sid, stream, seq))
        streams.setdefault((sid, stream), []).append(seq)
    return streams


# MARK: Spool files (Docs/spool.md, "On-disk format")

FRAME_HEADER = struct.Struct("<4sII QqHHBBH")
MAGIC = b"ESR1"


def read_segment(data: bytes):
    """Yields (offset, frame size, sequence, key, topic, message) of every valid frame, scanning byte by byte past
    damage the way recovery does."""
    offset = 0
    while offset + 36 <= len(data):
        magic, length, crc, sequence, _, key_length, topic_length, _, _, _ = FRAME_HEADER.unpack_from(data, offset)
        size = 12 + length
        if (magic == MAGIC and 24 <= length and offset + size <= len(data)
                and zlib.crc32(data[offset + 4:offset + 8] + data[offset + 12:offset + size]) == crc
                and 24 + key_length + topic_length <= length):
            body = data[offset + 36:offset + size]
            key = body[:key_length].decode()
            topic = body[key_length:key_length + topic_length].decode()
            yield offset, size, sequence, key, topic, bytes(body[key_length + topic_length:])
            offset += size
        else:
            offset += 1


def read_spool(directory: pathlib.Path):
    """Every valid record of a spool directory: {sequence: (segment name, offset, size, topic, message)}."""
    records = {}
    for segment in sorted(pathlib.Path(directory).glob("*.seg")):
        for offset, size, sequence, _, topic, message in read_segment(segment.read_bytes()):
            records[sequence] = (segment.name, offset, size, topic, message)
    return records
