"""The rig of `make test-fleet` (issue #22): three boards, one ward, one broker, one consumer — all real processes.

- three private dbus-daemons (one per board) and one `empalink-sim --ward` serving all three (Docs/simulator.md,
  "Ward mode"), its truth in `truth/ward.csv` and `truth/<serial>/`;
- one mosquitto on a free loopback port, `persistence false` (what a restart without persistence loses is what
  the test is about), stoppable and restartable on the same port;
- three empalinkd, `agent.id` board-a/b/c, each on its own bus with its own state: spool, control socket, log;
  `[fleet] enabled = true` unless the test runs with fleet off (all agents racing, to show the checks fail);
- a consumer: a paho MQTT 5 subscriber of `P/#` recording every message, which reconnects within 50 ms of the
  broker's return.

Every process is started here, remembered, and ended by its PID (faultrig.Processes); every wait is bounded.
"""
import os
import pathlib
import signal
import subprocess
import threading
import tomllib
import time

from faultrig import BUS_CONFIG, PREFIX, Processes, bin_dir, control_request, free_port, port_open, wait_until

HERE = pathlib.Path(__file__).resolve().parent
BOARDS = ("a", "b", "c")
DEVICES = 6


def serial(index):
    return f"a001{index:02x}"


def board_id(board):
    return f"board-{board}"


class Bus:
    def __init__(self, processes, work, name):
        directory = work / f"bus-{name}"
        directory.mkdir()
        self.socket = directory / "bus"
        (directory / "bus.conf").write_text(BUS_CONFIG.format(socket=self.socket))
        self.process = processes.start(["dbus-daemon", f"--config-file={directory / 'bus.conf'}", "--nofork",
                                        "--nopidfile"])
        wait_until(self.socket.exists, 10, f"dbus-daemon {name}'s socket")
        self.address = f"unix:path={self.socket}"


class Broker:
    """mosquitto without persistence on one port; `kill` and `start` again on the same port."""

    def __init__(self, processes, work):
        self.processes = processes
        self.work = work
        self.port = free_port()
        self.process = None
        self.starts = 0
        self.started_wall = []
        self.config = work / "mosquitto.conf"
        self.config.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
            "max_queued_messages 0\nmax_inflight_messages 100\n"
            + ("user root\n" if os.geteuid() == 0 else "")
            # `notice` logs every client's connection: the test checks who reconnected first after the restart.
            + "log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\nconnection_messages true\n")

    @property
    def log(self):
        return self.work / f"mosquitto.{self.starts}.log"

    def start(self):
        self.starts += 1
        self.process = self.processes.start(["mosquitto", "-c", self.config], log=self.log)
        wait_until(lambda: port_open(self.port) or self.process.poll() is not None, 10, "mosquitto's port")
        assert self.process.poll() is None, self.log.read_text()
        self.started_wall.append(time.time())

    def kill(self):
        """SIGKILL (a crash: nothing saved, nothing said to the clients), then its port closed."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self.processes.running.remove(self.process)
        wait_until(lambda: not port_open(self.port), 10, "mosquitto's port to close")


class Consumer:
    """MQTT 5 subscriber of `P/#`; records (arrival monotonic, topic, payload bytes, retain)."""

    def __init__(self, port, client_id="fleet-consumer"):
        import paho.mqtt.client as mqtt

        self.client_id = client_id
        self.lock = threading.Lock()
        self.messages = []
        self.connected = threading.Event()
        # Set once the broker has acknowledged the subscription of the current connection.
        self.subscribed = threading.Event()
        self.connects = 0
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        self.client.max_inflight_messages_set(100)
        self.client.reconnect_delay_set(min_delay=0.05, max_delay=0.05)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_subscribe = lambda *args: self.subscribed.set()
        self.client.on_message = self._on_message
        self.client.connect_async("127.0.0.1", port, keepalive=30)
        self.client.loop_start()
        assert self.connected.wait(10), "the consumer did not connect"

    def _on_connect(self, client, userdata, flags, reason, properties):
        if not reason.is_failure:
            self.connects += 1
            client.subscribe(PREFIX + "/#", qos=1)
            self.connected.set()

    def _on_disconnect(self, *args):
        self.connected.clear()
        self.subscribed.clear()

    def _on_message(self, client, userdata, message):
        with self.lock:
            self.messages.append((time.monotonic(), message.topic, bytes(message.payload), bool(message.retain)))

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


class Board:
    """One board's empalinkd: its configuration, start, SIGTERM, kill -9, control-socket status."""

    def __init__(self, processes, work, name, bus, broker_port, fleet, max_connections, key_file, keyring,
                 adapters=1):
        self.processes = processes
        self.name = name
        self.id = board_id(name)
        self.bus = bus
        self.dir = work / f"board-{name}"
        self.dir.mkdir()
        self.control = self.dir / "control.sock"
        self.config = self.dir / "empalinkd.toml"
        self.process = None
        self.runs = []          # [(start wall, stop wall or None)]
        lines = ["[agent]", f'id = "{self.id}"', 'log_level = "info"', f'control_socket = "{self.control}"', "",
                 "[auth]", f'api_key_file = "{key_file}"', f'keyring = "{keyring}"', "",
                 # Several adapters share the board's slots (its ward.toml board has as many).
                 "[bluetooth]", "adapter = [" + ", ".join(f'"hci{k}"' for k in range(adapters)) + "]",
                 'mode = "active"', f"max_connections = {max_connections // adapters}",
                 "reconnect_max_s = 4", ""]
        for index in range(1, DEVICES + 1):
            lines += ["[[wristband]]", f'serial = "{serial(index)}"', ""]
        lines += ["[mqtt]", 'host = "127.0.0.1"', f"port = {broker_port}", 'protocol = "5"', "qos = 1",
                  f'topic_prefix = "{PREFIX}"', "keepalive_s = 5", "",
                  "[publish]", "batch_ms = 250", "metrics_interval_s = 2", 'bvp = "raw"', "",
                  "[spool]", f'dir = "{self.dir / "spool"}"', 'mode = "offline"', "fsync_interval_ms = 200", ""]
        if fleet:
            lines += ["[fleet]", "enabled = true", ""]
        self.config.write_text("\n".join(lines))
        check = subprocess.run([bin_dir() / "empalinkd", "--check-config", "--config", self.config],
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, f"{self.id}: {check.stderr}"

    @property
    def log(self):
        return self.dir / f"empalinkd.{len(self.runs)}.log"

    def start(self):
        env = {k: v for k, v in os.environ.items() if k not in ("JOURNAL_STREAM", "NOTIFY_SOCKET")}
        env["DBUS_SYSTEM_BUS_ADDRESS"] = self.bus.address
        self.runs.append([time.time(), None])
        self.process = self.processes.start([bin_dir() / "empalinkd", "--config", self.config], log=self.log,
                                            env=env)
        return self.process

    def _ended(self):
        self.processes.running.remove(self.process)
        self.runs[-1][1] = time.time()

    def stop(self):
        code = Processes.stop(self.process, 10)
        self._ended()
        return code

    def kill9(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self._ended()

    def running(self):
        return self.process is not None and self.process.poll() is None

    def request(self, line="status", timeout=2.0):
        return control_request(self.control, line, timeout)


class Ward:
    """Buses, simulator, broker, consumer, boards. Use as a context manager; everything ends by PID on exit."""

    def __init__(self, work, fleet=True, scenario=HERE / "ward.toml", capacity=None, seed=3):
        self.work = work
        self.fleet = fleet
        self.scenario = scenario
        self.capacity = capacity or {"a": 3, "b": 4, "c": 3}
        # Board b has two adapters of two slots (`adapters = 2` in ward.toml): its links are spread over both.
        self.adapters = {name: board.get("adapters", 1) for name, board in
                         ((b["name"], b) for b in tomllib.loads(pathlib.Path(scenario).read_text())["ward"]["board"])}
        self.seed = seed
        self.processes = Processes()
        self.consumer = None
        # The consumer stamps arrivals on the monotonic clock: monotonic - monotonic_offset = wall-clock time.
        self.monotonic_offset = time.monotonic() - time.time()

    def __enter__(self):
        try:
            self.buses = {name: Bus(self.processes, self.work, name) for name in BOARDS}
            self.broker = Broker(self.processes, self.work)
            self.broker.start()
            self.consumer = Consumer(self.broker.port)
            keyring, key_file = self.work / "keyring.toml", self.work / "api-key"
            made = subprocess.run([bin_dir() / "empalinkctl", "key", "add", "--devices", "*", "--keyring", keyring],
                                  capture_output=True, text=True, timeout=30)
            assert made.returncode == 0, made.stderr
            key_file.write_text(made.stdout)
            self.boards = {name: Board(self.processes, self.work, name, self.buses[name], self.broker.port,
                                       self.fleet, self.capacity[name], key_file, keyring,
                                       adapters=self.adapters.get(name, 1)) for name in BOARDS}
            self.truth = self.work / "truth"
            args = [bin_dir() / "empalink-sim", "--ward", self.scenario, "--devices", DEVICES, "--seed", self.seed,
                    "--truth", self.truth, "--log-level", "info"]
            for name, bus in self.buses.items():
                args += ["--bus", f"{name}={bus.address}"]
            self.sim_log = self.work / "sim.log"
            self.sim = self.processes.start(args, log=self.sim_log)
            self.sim_started = time.time()
            wait_until(lambda: all(self.sim_answers(name) for name in BOARDS), 15, "empalink-sim on three buses",
                       interval=0.1)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.consumer is not None:
            try:
                self.consumer.close()
            except Exception:  # noqa: BLE001 - the processes below are stopped whatever happens
                pass
        self.processes.stop_all()
        return False

    def sim_call(self, board, method, *args):
        return subprocess.run(["busctl", f"--address={self.buses[board].address}", "call", "org.empalink.Simulator",
                               "/org/empalink/simulator", "org.empalink.Simulator1", method, *map(str, args)],
                              capture_output=True, text=True, timeout=10)

    def sim_answers(self, board):
        assert self.sim.poll() is None, f"empalink-sim exited: {self.sim_log.read_text()}"
        return self.sim_call(board, "Stats").returncode == 0

    def radio_off(self, board, seconds):
        result = self.sim_call(board, "RadioOff", "d", seconds)
        assert result.returncode == 0, result.stderr

    def stop_sim(self):
        code = Processes.stop(self.sim, 10)
        self.processes.running.remove(self.sim)
        return code
