"""A private dbus-daemon with empalink-sim on it, for tests of the operator tools against the simulator."""
import contextlib
import pathlib
import signal
import subprocess
import tempfile
import time

from conftest import bin_dir

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


def stop(process):
    """Ends a process we started, by PID: SIGTERM, then SIGKILL after 5 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Rig:
    def __init__(self, tmp, address, truth, sim):
        self.tmp = tmp
        self.address = address
        self.truth = truth
        self.sim = sim

    @property
    def env(self):
        import os
        return dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address)

    def truth_rows(self, serial, name):
        import csv
        with open(self.truth / serial / name) as handle:
            return list(csv.DictReader(handle))


@contextlib.contextmanager
def simulated_bus(devices=1, seed=1):
    """Yields a Rig; ends every process it started, by PID, also on failure."""
    with tempfile.TemporaryDirectory(prefix="empalink-rig-") as tmp:
        tmp = pathlib.Path(tmp)
        socket = tmp / "bus"
        (tmp / "bus.conf").write_text(BUS_CONFIG.format(socket=socket))
        processes = []
        try:
            processes.append(subprocess.Popen(
                ["dbus-daemon", f"--config-file={tmp / 'bus.conf'}", "--nofork", "--nopidfile"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            address = f"unix:path={socket}"
            deadline = time.monotonic() + 10
            while not socket.exists():
                assert time.monotonic() < deadline, "dbus-daemon did not create its socket"
                time.sleep(0.02)
            truth = tmp / "truth"
            log = open(tmp / "sim.log", "w")
            sim = subprocess.Popen([str(bin_dir() / "empalink-sim"), "--bus", address, "--devices", str(devices),
                                    "--seed", str(seed), "--truth", str(truth), "--log-level", "warn"],
                                   stdout=log, stderr=log)
            processes.append(sim)
            while True:
                probe = subprocess.run(["dbus-send", f"--bus={address}", "--print-reply", "--dest=org.empalink.Simulator",
                                        "/org/empalink/simulator", "org.freedesktop.DBus.Peer.Ping"],
                                       capture_output=True, timeout=10)
                if probe.returncode == 0:
                    break
                assert sim.poll() is None, f"empalink-sim exited: {(tmp / 'sim.log').read_text()}"
                assert time.monotonic() < deadline, "empalink-sim did not come up"
                time.sleep(0.05)
            yield Rig(tmp, address, truth, sim)
        finally:
            for process in reversed(processes):
                stop(process)
