#!/usr/bin/env python3
"""Daemon-level benchmark (SPEC §14, issue 8): the real empalinkd against empalink-sim and mosquitto.

For each (batch_ms, wristband count) it starts a private dbus-daemon, empalink-sim --devices N, mosquitto on a
free loopback port and empalinkd, waits until every wristband streams, warms up, and then measures over a window:

- CPU: run time of every empalinkd thread (/proc/PID/task/*/schedstat, nanoseconds; utime + stime from
  /proc/PID/stat is kept in the JSON but counts 10 ms ticks) over the window, as a share of one core; divided by N
  for the share per wristband.
- RSS: VmRSS (and the peak VmHWM) from /proc/PID/status at the end of the window. In the JSON also the resident
  KiB per mapped file and how much of it was referenced during the window (referenced bits cleared through
  /proc/PID/clear_refs at its start). For the daemon's own binary and heap that is its steady-state working set;
  for shared libraries it over-counts (a page cache folio other processes use reads as referenced).
- Wake-ups: voluntary context switches summed over every thread (/proc/PID/task/*/status) per second: each one
  is a thread blocking (epoll_wait, a futex) and being woken again. Involuntary switches (preemption) are shown
  apart.
- Latency, on BVP messages: subscriber receive time (time.time() in paho's on_message, QoS 0 subscription)
  minus the time the simulator was due to send the notification carrying the message's last sample. From the
  simulator's truth (bvp.csv): due = t(last sample) + 1/64 s; the simulator sends at its first tick after that,
  so with tick_ms = 5 (set here) the figure over-states the path notification → agent → broker → subscriber by
  0–5 ms (2.5 ms on average). Messages are aligned with the truth by value (the published BVP values, 3 decimals,
  against bvp.csv) and then by sample count along seq.
- Timestamp error: the published time of each BVP message's first sample minus the simulator's (bvp.csv), for the
  same messages as the latency.
- Background mode (--background N,...): the daemon switched to background mode with SIGUSR1 once it streams
  (background_batch_ms 2000), measured the same way.
- The peer (--peer N,...): peer_forwarder.py, a bleak + paho-mqtt forwarder (no decoding, IBI or spool), on the
  same simulator load in a stack of its own, measured as the daemon is (CPU of every thread, voluntary context
  switches, VmRSS); the ratio of CPU per wristband against the daemon's batch_ms 250 run.
- An idle run: no wristband in the whitelist (nothing to discover or connect), broker connected, metrics on;
  wake-ups per second and CPU over the window.

Results: a Markdown table on stdout and JSON (--json PATH). Every process started here is stopped by PID.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import paho.mqtt.client as mqtt

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peer_forwarder.py")
PREFIX = "empalink"
AGENT = "bench"


def serial(k):
    return "a001%02x" % k


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cpu_seconds(pid):
    """CPU time of every thread in seconds: the scheduler's nanosecond run time (/proc/PID/task/*/schedstat).
    utime + stime from /proc/PID/stat count 10 ms ticks, too coarse for 0.1 % over 20 s."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total / 1e9


def ticks_seconds(pid):
    """utime + stime (/proc/PID/stat, whole process), for comparison with the schedstat figure."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After the comm, the state is [0]: utime (field 14 of the line) is [11], stime [12].
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def status_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def rollup(pid):
    """Pss and anonymous (private, heap and stacks) memory in KiB, from /proc/PID/smaps_rollup."""
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] in ("Pss:", "Anonymous:"):
                values[parts[0][:-1].lower()] = int(parts[1])
    return values.get("pss", 0), values.get("anonymous", 0)


def clear_referenced(pid):
    """Clears the referenced bits of every page of the process (/proc/PID/clear_refs), so that `Referenced`
    afterwards counts the pages it touched since: its working set over the window."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("1")
        return True
    except OSError:
        return False


def referenced_kib(pid):
    """KiB of the process's resident pages referenced since clear_referenced (smaps_rollup `Referenced`)."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Referenced:"):
                return int(line.split()[1])
    return 0


def rss_by_file(pid, field="Rss"):
    """Resident KiB per mapped file ("[anon]" for heap, stacks and anonymous maps), largest first; `field` picks
    another smaps figure (e.g. "Referenced")."""
    totals = {}
    current = "[anon]"
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if parts and not parts[0].endswith(":"):
                current = os.path.basename(parts[5]) if len(parts) > 5 and parts[5].startswith("/") else "[anon]"
            elif parts and parts[0] == field + ":":
                totals[current] = totals.get(current, 0) + int(parts[1])
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def context_switches(pid):
    """Voluntary and involuntary switches summed over the threads, their count, and the voluntary ones per thread
    (by `comm` name and thread id, so that a wake-up budget can be split between the loop and its helpers)."""
    voluntary = involuntary = 0
    threads = 0
    per_thread = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        count = int(line.split()[1])
                        voluntary += count
                        per_thread[f"{name}/{tid}"] = count
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        involuntary += int(line.split()[1])
            threads += 1
        except FileNotFoundError:
            pass
    return voluntary, involuntary, threads, per_thread


def snapshot(pid):
    voluntary, involuntary, threads, per_thread = context_switches(pid)
    return {"time": time.monotonic(), "cpu": cpu_seconds(pid), "ticks": ticks_seconds(pid), "voluntary": voluntary,
            "involuntary": involuntary, "threads": threads, "per_thread": per_thread}


def rates(before, after):
    seconds = after["time"] - before["time"]
    return {
        "seconds": seconds,
        "cpu_percent": 100 * (after["cpu"] - before["cpu"]) / seconds,
        "cpu_percent_ticks": 100 * (after["ticks"] - before["ticks"]) / seconds,
        "wakeups_per_s": (after["voluntary"] - before["voluntary"]) / seconds,
        "involuntary_per_s": (after["involuntary"] - before["involuntary"]) / seconds,
        "threads": after["threads"],
        "wakeups_per_s_by_thread": {
            name: round((count - before.get("per_thread", {}).get(name, 0)) / seconds, 3)
            for name, count in after.get("per_thread", {}).items()},
    }


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(p / 100 * (len(ordered) - 1)))))
    return ordered[index]


class Stack:
    """dbus-daemon, empalink-sim, mosquitto and empalinkd in a private work directory."""

    def __init__(self, bindir, work, devices, batch_ms, whitelist, spool_mode="offline", peer=False, bvp="raw", qos=1):
        self.peer = peer
        self.bvp = bvp
        self.qos = qos
        self.bindir = bindir
        self.work = work
        self.devices = devices
        self.batch_ms = batch_ms
        self.spool_mode = spool_mode
        self.whitelist = whitelist
        self.processes = []
        self.port = free_port()
        os.makedirs(work, exist_ok=True)

    def start_process(self, name, argv, env=None):
        log = open(os.path.join(self.work, name + ".log"), "w")
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.processes.append((name, process))
        return process

    def start(self):
        work = self.work
        bus = os.path.join(work, "bus")
        for stale in (bus, os.path.join(work, "control.sock"), os.path.join(work, "keyring.toml")):
            if os.path.exists(stale):
                os.unlink(stale)
        with open(os.path.join(work, "bus.conf"), "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path={bus}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
<allow own="*"/></policy></busconfig>
""")
        self.start_process("dbus", ["dbus-daemon", f"--config-file={work}/bus.conf", "--nofork", "--nopidfile"])
        for _ in range(100):
            if os.path.exists(bus):
                break
            time.sleep(0.05)
        address = f"unix:path={bus}"
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)

        with open(os.path.join(work, "mosquitto.conf"), "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self.start_process("mosquitto", ["mosquitto", "-c", f"{work}/mosquitto.conf"])

        with open(os.path.join(work, "scenario.toml"), "w") as f:
            f.write("[timing]\ntick_ms = 5\n")
        self.truth = os.path.join(work, "truth")
        self.sim = self.start_process("sim", [f"{self.bindir}/empalink-sim", "--bus", address, "--devices",
                                              str(self.devices), "--seed", "1", "--scenario",
                                              f"{work}/scenario.toml", "--truth", self.truth,
                                              "--log-level", "warn"])

        if self.peer:
            # The bleak + paho forwarder in place of empalinkd, on the same simulator load.
            time.sleep(0.3)
            self.daemon = self.start_process("peer", [sys.executable, "-u", PEER, "--port", str(self.port),
                                                      "--devices", str(self.devices)], env=env)
            return
        key = subprocess.run([f"{self.bindir}/empalinkctl", "key", "add", "--devices", "*", "--keyring",
                              f"{work}/keyring.toml"], check=True, capture_output=True, text=True).stdout.strip()
        with open(os.path.join(work, "api-key"), "w") as f:
            f.write(key + "\n")
        wristbands = "".join(f'\n[[wristband]]\nserial = "{serial(k)}"\n'
                             for k in range(1, self.devices + 1)) if self.whitelist else ""
        with open(os.path.join(work, "empalinkd.toml"), "w") as f:
            f.write(f"""[agent]
id = "{AGENT}"
log_level = "warn"
control_socket = "{work}/control.sock"

[auth]
api_key_file = "{work}/api-key"
keyring = "{work}/keyring.toml"

[bluetooth]
mode = "active"
max_connections = {max(self.devices, 1)}
{wristbands}
[mqtt]
host = "127.0.0.1"
port = {self.port}
protocol = "5"
topic_prefix = "{PREFIX}"
qos = {self.qos}

[publish]
batch_ms = {self.batch_ms}
bvp = "{self.bvp}"
metrics_interval_s = 10

[spool]
dir = "{work}/spool"
mode = "{self.spool_mode}"
""")
        time.sleep(0.3)
        self.daemon = self.start_process("empalinkd", [f"{self.bindir}/empalinkd", "--config",
                                                       f"{work}/empalinkd.toml"], env=env)

    def stop(self):
        # Newest first, each waited for, so the agent says goodbye to a broker that is still there and the
        # simulator flushes its truth files.
        for name, process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.processes = []


class Subscriber:
    """Receives the agent's BVP messages with their arrival times."""

    def __init__(self, port):
        self.lock = threading.Lock()
        self.messages = []
        self.per_serial = {}
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-{os.getpid()}")
        self.client.on_message = self.on_message
        self.client.on_connect = lambda client, userdata, flags, reason, properties: client.subscribe(
            f"{PREFIX}/{AGENT}/+/bvp", qos=0)
        for _ in range(100):
            try:
                self.client.connect("127.0.0.1", port)
                break
            except OSError:
                time.sleep(0.05)
        self.client.loop_start()

    def on_message(self, client, userdata, message):
        received = time.time()
        serial_number = message.topic.split("/")[2]
        with self.lock:
            self.messages.append((received, serial_number, message.payload))
            self.per_serial[serial_number] = self.per_serial.get(serial_number, 0) + 1

    def streaming(self, devices, minimum=3):
        with self.lock:
            return sum(1 for count in self.per_serial.values() if count >= minimum) >= devices

    def stop(self):
        self.client.loop_stop()
        self.client.disconnect()


def read_truth(directory):
    """bvp.csv rows of the first session: [(t, value)]."""
    rows = []
    with open(os.path.join(directory, "bvp.csv")) as f:
        header = f.readline().strip().split(",")
        t_col, v_col, s_col, st_col = (header.index(name) for name in ("t", "value", "session", "status"))
        for line in f:
            fields = line.strip().split(",")
            if fields[s_col] != "1" or fields[st_col] != "0":
                continue
            rows.append((float(fields[t_col]), float(fields[v_col])))
    return rows


def latencies(messages, truth_dir, window):
    """Receive time minus notification due time for every BVP message received inside `window`: for the
    notification carrying the message's last sample, and for the one carrying its first (they differ when
    batch_ms > 0: the first waited longest)."""
    by_serial = {}
    for received, serial_number, payload in messages:
        body = json.loads(payload)
        by_serial.setdefault(serial_number, []).append((received, body))
    result = []
    oldest = []
    errors = []
    unaligned = []
    for serial_number, items in by_serial.items():
        sid = items[0][1]["sid"]
        items = sorted((item for item in items if item[1]["sid"] == sid), key=lambda item: item[1]["seq"])
        truth = read_truth(os.path.join(truth_dir, serial_number))
        values = [value for _, value in truth]
        first = items[0][1]["v"]
        offset = None
        for candidate in range(0, min(len(values) - len(first), 64 * 30)):
            if all(abs(round(values[candidate + i], 3) - first[i]) <= 0.0015 for i in range(len(first))):
                offset = candidate
                break
        if offset is None:
            unaligned.append(serial_number)
            continue
        index = offset
        expected_seq = items[0][1]["seq"]
        for received, body in items:
            if body["seq"] != expected_seq:
                break  # a gap in seq: stop rather than mis-align
            expected_seq += 1
            last = index + len(body["v"]) - 1
            index += len(body["v"])
            if last >= len(truth):
                break
            if abs(round(truth[last][1], 3) - body["v"][-1]) > 0.0015:
                unaligned.append(serial_number)
                break
            if window[0] <= received <= window[1]:
                # The published time of the message's first sample against the simulator's.
                errors.append(body["t"] - truth[index - len(body["v"])][0])
                # The batch's first notification: the packet holding its first sample ends 10 samples later.
                first_packet_end = min(last, index - len(body["v"]) + 10)
                result.append(received - (truth[last][0] + 1 / 64))
                oldest.append(received - (truth[first_packet_end][0] + 1 / 64))
    return result, oldest, errors, unaligned


def run_one(args, devices, batch_ms, spool_mode="offline", background=False):
    """One daemon run; `background`: switched to background mode (SIGUSR1, `background_batch_ms` 2000) once every
    wristband streams, before the warm-up."""
    work = os.path.join(args.work, f"n{devices}-b{batch_ms}-{spool_mode}" + ("-bg" if background else ""))
    stack = Stack(args.bin, work, devices, batch_ms, whitelist=True, spool_mode=spool_mode, bvp=args.bvp,
                  qos=args.qos)
    subscriber = None
    try:
        stack.start()
        subscriber = Subscriber(stack.port)
        deadline = time.monotonic() + args.connect_timeout
        while not subscriber.streaming(devices):
            if time.monotonic() > deadline or stack.daemon.poll() is not None:
                raise RuntimeError(f"{devices} wristbands not streaming after {args.connect_timeout} s "
                                   f"(logs in {work})")
            time.sleep(0.2)
        connected = time.monotonic() - (deadline - args.connect_timeout)
        if background:
            stack.daemon.send_signal(signal.SIGUSR1)
        time.sleep(args.warmup)
        pid = stack.daemon.pid
        load_before = loadavg()
        cleared = clear_referenced(pid)
        before = snapshot(pid)
        wall_start = time.time()
        time.sleep(args.seconds)
        after = snapshot(pid)
        wall_end = time.time()
        working_set = referenced_kib(pid) if cleared else None
        referenced_by_file = rss_by_file(pid, "Referenced") if cleared else {}
        rss = status_field(pid, "VmRSS")
        hwm = status_field(pid, "VmHWM")
        pss, anonymous = rollup(pid)
        by_file = rss_by_file(pid)
        sim_cpu = cpu_seconds(stack.sim.pid)
        measured = rates(before, after)
        with subscriber.lock:
            messages = list(subscriber.messages)
    finally:
        if subscriber is not None:
            subscriber.stop()
        stack.stop()
    delays, oldest, errors, unaligned = latencies(messages, stack.truth, (wall_start, wall_end))
    magnitudes = [abs(error) for error in errors]
    return {
        "devices": devices, "batch_ms": 2000 if background else batch_ms, "background": background,
        "spool_mode": spool_mode, "connect_seconds": round(connected, 1),
        "t_error_ms_p50": 1000 * percentile(magnitudes, 50), "t_error_ms_p99": 1000 * percentile(magnitudes, 99),
        "t_error_ms_max": 1000 * max(magnitudes) if magnitudes else float("nan"),
        "t_error_ms_mean": 1000 * sum(errors) / len(errors) if errors else float("nan"),
        **measured,
        "cpu_percent_per_wristband": measured["cpu_percent"] / devices,
        "rss_kib": rss, "hwm_kib": hwm, "pss_kib": pss, "anonymous_kib": anonymous, "rss_kib_by_file": by_file,
        "working_set_kib": working_set, "referenced_kib_by_file": referenced_by_file,
        "latency_ms_p50": 1000 * percentile(delays, 50), "latency_ms_p99": 1000 * percentile(delays, 99),
        "latency_ms_max": 1000 * max(delays) if delays else float("nan"),
        "latency_samples": len(delays), "unaligned_serials": unaligned,
        "first_latency_ms_p50": 1000 * percentile(oldest, 50),
        "first_latency_ms_p99": 1000 * percentile(oldest, 99),
        "sim_cpu_seconds_total": sim_cpu,
        "load_before": load_before, "load_after": loadavg(),
    }


def run_peer(args, devices):
    """The bleak + paho forwarder (peer_forwarder.py) on the same simulator load, measured as the daemon is."""
    work = os.path.join(args.work, f"n{devices}-peer")
    stack = Stack(args.bin, work, devices, 0, whitelist=True, peer=True)
    try:
        stack.start()
        log = os.path.join(work, "peer.log")
        deadline = time.monotonic() + args.connect_timeout
        while True:
            with open(log) as f:
                if f"streaming {devices}" in f.read():
                    break
            if time.monotonic() > deadline or stack.daemon.poll() is not None:
                raise RuntimeError(f"peer forwarder not streaming {devices} wristbands (logs in {work})")
            time.sleep(0.2)
        time.sleep(args.warmup)
        pid = stack.daemon.pid
        load_before = loadavg()
        before = snapshot(pid)
        time.sleep(args.seconds)
        after = snapshot(pid)
        measured = rates(before, after)
        rss = status_field(pid, "VmRSS")
        pss, anonymous = rollup(pid)
    finally:
        stack.stop()
    return {"devices": devices, **measured, "cpu_percent_per_wristband": measured["cpu_percent"] / devices,
            "rss_kib": rss, "pss_kib": pss, "anonymous_kib": anonymous,
            "load_before": load_before, "load_after": loadavg()}


def run_idle(args):
    work = os.path.join(args.work, "idle")
    stack = Stack(args.bin, work, 1, 250, whitelist=False)
    try:
        stack.start()
        time.sleep(args.warmup + 2)
        pid = stack.daemon.pid
        if stack.daemon.poll() is not None:
            raise RuntimeError(f"empalinkd exited (logs in {work})")
        before = snapshot(pid)
        time.sleep(args.idle_seconds)
        after = snapshot(pid)
        pss, anonymous = rollup(pid)
        result = {"devices": 0, **rates(before, after), "rss_kib": status_field(pid, "VmRSS"),
                  "pss_kib": pss, "anonymous_kib": anonymous, "load": loadavg()}
    finally:
        stack.stop()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True, help="directory with release-built empalinkd, empalink-sim, "
                        "empalinkctl")
    parser.add_argument("--work", default=".build/bench-daemon")
    parser.add_argument("--devices", default="1,5,10,20")
    parser.add_argument("--batch", default="0,250", help="batch_ms values")
    parser.add_argument("--spool-mode", default="offline",
                        help="spool.mode values, e.g. offline,always: each (batch_ms, wristbands) runs once per mode, "
                        "side by side")
    parser.add_argument("--seconds", type=float, default=20, help="measurement window per run")
    parser.add_argument("--warmup", type=float, default=5, help="seconds after every wristband streams")
    parser.add_argument("--idle-seconds", type=float, default=30, help="0 skips the idle run")
    parser.add_argument("--rss-files", type=int, default=0, metavar="N",
                        help="also print each run's N largest resident mappings by file")
    parser.add_argument("--connect-timeout", type=float, default=90)
    parser.add_argument("--peer", default="5,20", help="wristband counts to run the bleak + paho forwarder at, "
                        "side by side with the daemon (empty: none)")
    parser.add_argument("--background", default="5", help="wristband counts to run the daemon at in background "
                        "mode (SIGUSR1: background_batch_ms 2000) too (empty: none)")
    parser.add_argument("--bvp", default="raw", choices=("raw", "filtered"),
                        help="publish.bvp: raw (default) publishes the simulator's values, which the latency and "
                        "timestamp figures align with its truth by value; filtered (the agent's default since #18) "
                        "cannot be aligned, so those figures are then missing")
    parser.add_argument("--qos", type=int, default=1, choices=(0, 1, 2),
                        help="mqtt.qos of the daemon (default 1, the agent's default; the forwarder always uses 1)")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.work = os.path.abspath(args.work)

    os.makedirs(args.work, exist_ok=True)
    stripped = os.path.join(args.work, "empalinkd.stripped")
    subprocess.run(["strip", "-o", stripped, f"{args.bin}/empalinkd"], check=True)
    results = {"machine": {"cpus": os.cpu_count(), "kernel": os.uname().release},
               "binary": {"bytes": os.path.getsize(f"{args.bin}/empalinkd"),
                          "stripped_bytes": os.path.getsize(stripped)},
               "runs": [], "idle": None}
    print(f"bench-daemon: empalinkd {results['binary']['bytes'] / 1e6:.1f} MB, stripped "
          f"{results['binary']['stripped_bytes'] / 1e6:.1f} MB", flush=True)
    print(f"bench-daemon: {os.cpu_count()} CPUs, load {loadavg():.2f}; window {args.seconds:.0f} s, "
          f"warm-up {args.warmup:.0f} s", flush=True)
    idle = None
    if args.idle_seconds > 0:
        results["idle"] = idle = run_idle(args)
        print(f"idle: {idle['wakeups_per_s']:.2f} wake-ups/s (+{idle['involuntary_per_s']:.2f} involuntary), "
              f"CPU {idle['cpu_percent']:.3f} %, RSS {idle['rss_kib'] / 1024:.1f} MiB, {idle['threads']} threads",
              flush=True)
    modes = args.spool_mode.split(",")
    for batch_ms in (int(value) for value in args.batch.split(",")):
        for devices in (int(value) for value in args.devices.split(",")):
            for mode in modes:
                run = run_one(args, devices, batch_ms, mode)
                results["runs"].append(run)
                print(f"{mode:7s} batch_ms {batch_ms:4d}, {devices:2d} wristbands: CPU {run['cpu_percent']:.2f} % "
                      f"({run['cpu_percent_per_wristband']:.3f} %/wristband), RSS {run['rss_kib'] / 1024:.1f} MiB, "
                      f"{run['wakeups_per_s']:.1f} wake-ups/s, latency p50 {run['latency_ms_p50']:.1f} ms "
                      f"p99 {run['latency_ms_p99']:.1f} ms (n={run['latency_samples']}), "
                      f"load {run['load_before']:.1f}", flush=True)
                if args.rss_files > 0:
                    top = list(run["rss_kib_by_file"].items())[:args.rss_files]
                    referenced = run["referenced_kib_by_file"]
                    print("  RSS / referenced in the window, by file (KiB): "
                          + ", ".join(f"{name} {kib}/{referenced.get(name, '?')}" for name, kib in top)
                          + f"; Pss {run['pss_kib']}, anon {run['anonymous_kib']}", flush=True)

    for devices in (int(value) for value in args.background.split(",") if value):
        run = run_one(args, devices, 250, "offline", background=True)
        results["runs"].append(run)
        threads = ", ".join(f"{name} {rate:.2f}" for name, rate in
                            sorted(run["wakeups_per_s_by_thread"].items(), key=lambda item: -item[1]) if rate > 0)
        print(f"background (2000 ms), {devices:2d} wristbands: CPU {run['cpu_percent']:.2f} %, "
              f"{run['wakeups_per_s']:.1f} wake-ups/s ({threads}), load {run['load_before']:.1f}", flush=True)
    results["peer"] = []
    for devices in (int(value) for value in args.peer.split(",") if value):
        peer = run_peer(args, devices)
        results["peer"].append(peer)
        print(f"peer (bleak + paho), {devices:2d} wristbands: CPU {peer['cpu_percent']:.2f} % "
              f"({peer['cpu_percent_per_wristband']:.3f} %/wristband), RSS {peer['rss_kib'] / 1024:.1f} MiB, "
              f"{peer['wakeups_per_s']:.0f} wake-ups/s, load {peer['load_before']:.1f}", flush=True)

    print()
    print("| spool.mode | batch_ms | wristbands | CPU % of one core | CPU % per wristband | RSS MiB (peak) | anon MiB "
          "| wake-ups/s | latency p50 / p99 / max ms (n) | first notification p50 / p99 ms | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for run in results["runs"]:
        print(f"| {run['spool_mode']} | {run['batch_ms']} | {run['devices']} | {run['cpu_percent']:.2f} | "
              f"{run['cpu_percent_per_wristband']:.3f} | {run['rss_kib'] / 1024:.1f} ({run['hwm_kib'] / 1024:.1f}) "
              f"| {run['anonymous_kib'] / 1024:.1f} | {run['wakeups_per_s']:.1f} | {run['latency_ms_p50']:.1f} / "
              f"{run['latency_ms_p99']:.1f} / "
              f"{run['latency_ms_max']:.1f} ({run['latency_samples']}) | {run['first_latency_ms_p50']:.1f} / "
              f"{run['first_latency_ms_p99']:.1f} | {run['load_before']:.1f} |")
    if idle is not None:
        print(f"| offline | idle | 0 | {idle['cpu_percent']:.3f} | – | {idle['rss_kib'] / 1024:.1f} | "
              f"{idle['anonymous_kib'] / 1024:.1f} | "
              f"{idle['wakeups_per_s']:.2f} | – | – | {idle['load']:.1f} |")
    print()
    print("| run | batch_ms | wristbands | timestamp error vs truth p50 / p99 / max ms | mean ms |")
    print("| --- | --- | --- | --- | --- |")
    for run in results["runs"]:
        print(f"| {'background' if run.get('background') else run['spool_mode']} | {run['batch_ms']} | "
              f"{run['devices']} | {run['t_error_ms_p50']:.2f} / {run['t_error_ms_p99']:.2f} / "
              f"{run['t_error_ms_max']:.2f} | {run['t_error_ms_mean']:+.2f} |")
    if results["peer"]:
        print()
        print("| wristbands | empalinkd (batch_ms 250) CPU %/wristband | peer CPU %/wristband | ratio | "
              "wake-ups/s empalinkd / peer | RSS MiB empalinkd / peer | load |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for peer in results["peer"]:
            ours = [run for run in results["runs"] if run["devices"] == peer["devices"] and run["batch_ms"] == 250
                    and not run.get("background") and run["spool_mode"] == "offline"]
            if not ours:
                continue
            run = ours[0]
            ratio = run["cpu_percent_per_wristband"] / peer["cpu_percent_per_wristband"]
            peer["ratio"] = ratio
            print(f"| {peer['devices']} | {run['cpu_percent_per_wristband']:.3f} | "
                  f"{peer['cpu_percent_per_wristband']:.3f} | {ratio:.3f} (1/{1 / ratio:.0f}) | "
                  f"{run['wakeups_per_s']:.1f} / {peer['wakeups_per_s']:.0f} | {run['rss_kib'] / 1024:.1f} / "
                  f"{peer['rss_kib'] / 1024:.1f} | {run['load_before']:.1f} / {peer['load_before']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"bench-daemon: wrote {args.json}")
    failed = [run for run in results["runs"] if run["unaligned_serials"]]
    for run in failed:
        print(f"bench-daemon: warning: {run['devices']} wristbands, batch_ms {run['batch_ms']}: BVP messages of "
              f"{run['unaligned_serials']} could not be aligned with the truth", file=sys.stderr)


if __name__ == "__main__":
    main()
