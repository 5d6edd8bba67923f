"""Helpers for the consumer tools' end-to-end tests (SPEC §17): the agent rig (bus, simulator, mosquitto, empalinkd)
plus `empalinkctl record|e4-server|watch` started here and ended here by PID."""
import bisect
import socket
import time

from agent_rig import DIE_WITH_PARENT, free_port, stop, wait_until  # noqa: F401 - re-exported for the tests


def start_ctl(rig, *args, log_name):
    """Starts `empalinkctl ARGS` in the rig (stopped with it); returns (process, log path)."""
    process = rig._spawn([rig.bin / "empalinkctl", *args], log_name)
    return process, rig.tmp / log_name


def start_e4_server(rig, *extra, prefix="empalink"):
    """`empalinkctl e4-server` on a free loopback port; returns (process, port, log path) once it answers."""
    port = free_port()
    process, log = start_ctl(rig, "e4-server", "--host", "127.0.0.1", "--port", str(rig.port), "--prefix", prefix,
                             "--listen", f"127.0.0.1:{port}", *extra, log_name=f"e4-server-{port}.log")

    def answering():
        if process.poll() is not None:
            raise RuntimeError(f"e4-server exited {process.returncode}: {log.read_text()}")
        try:
            with LineClient(port) as client:
                return client.command("server_status") == "R server_status OK"
        except OSError:
            return False
    if not wait_until(answering, 15, interval=0.1):
        raise RuntimeError(f"e4-server did not answer: {log.read_text()}")
    return process, port, log


class LineClient:
    """A plain TCP client of the streaming-server protocol: commands out, lines in."""

    def __init__(self, port, timeout=5):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    def send(self, text):
        self.sock.sendall(text.encode())

    def line(self, timeout=5):
        """The next line (without its line end), or None at EOF."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode().rstrip("\r")

    def command(self, text, timeout=5):
        """Sends one command; returns the first reply line (`R ...`), skipping data lines."""
        self.send(text + "\n")
        deadline = time.monotonic() + timeout
        while True:
            line = self.line(max(0.01, deadline - time.monotonic()))
            if line is None or line.startswith("R "):
                return line


def truth_series(rig, k, name, columns):
    """Delivered truth samples of device k: sorted list of (t, values...)."""
    rows = rig.read_truth(k, name)
    return [(float(r["t"]), *[float(r[c]) for c in columns]) for r in rows if r.get("status", "0") == "0"]


def nearest(series, t):
    """The row of `series` (sorted by time) whose time is nearest `t`."""
    times = [row[0] for row in series]
    index = bisect.bisect_left(times, t)
    candidates = [series[i] for i in (index - 1, index) if 0 <= i < len(series)]
    return min(candidates, key=lambda row: abs(row[0] - t))
