#!/usr/bin/env python3
"""Replay memory (issue 23, item 14): empalinkd's private memory (RssAnon) before, during and after the replay of a
spool backlog.

Two ways to make the backlog:

- `--outage-minutes M` (the real thing): empalink-sim streams `--devices N` wristbands (default 5) into the
  agent; after a steady-state minute the broker is stopped for M minutes, then started again, and the agent
  replays what it spooled while the wristbands keep streaming.
- `--synthetic-mb B`: a spool of B MB of records in the documented on-disk format (Docs/spool.md), in the shape
  of 5 wristbands' BVP/ACC/GSR/temperature messages, written while the agent is stopped; the agent (no
  Bluetooth) starts on it with the broker down, then the broker starts. Quick: a 30-minute outage of 5
  wristbands is about 22 MB (2.4 kB/s each, Docs/spool.md) and replays in about 80 s at replay_rate 1000.

Reported, in MB of RssAnon (/proc/PID/status): steady state (empty spool, broker up), after recovery or at the
end of the outage, the peak while replaying (sampled every 0.2 s), and 10 s after the spool drained. Every
process is started by faultrig and stopped by its PID.

    EMPALINK_BIN=.build/release .venv/bin/python bench/daemon/replay_memory.py --synthetic-mb 22
    EMPALINK_BIN=.build/release .venv/bin/python bench/daemon/replay_memory.py --outage-minutes 30
"""
import argparse
import json
import pathlib
import struct
import sys
import time
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "integration" / "faults"))

from faultrig import (Agent, Broker, Bus, Processes, Simulator, free_port, make_work,  # noqa: E402
                      remove_work)


def rss_anon_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise RuntimeError("no RssAnon")


def write_synthetic_spool(directory: pathlib.Path, total_bytes: int, segment_bytes: int = 4 << 20) -> int:
    """Frames records (Docs/spool.md) into segments until `total_bytes`; returns how many."""
    directory.mkdir(parents=True, exist_ok=True)
    streams = ("bvp", "acc", "gsr", "temp")
    now = int(time.time() * 1e6)
    sequence, segment, size, written, out = 0, 1, 0, 0, None
    while written < total_bytes:
        device = f"a001{sequence % 5 + 1:02x}"
        stream = streams[sequence % 4]
        key = f"{device}/{stream}".encode()
        topic = f"empalink/faults/{device}/{stream}".encode()
        message = json.dumps({"sid": "bench", "seq": sequence,
                              "v": [round(0.001 * i, 3) for i in range(25)]}).encode()
        body = struct.pack("<QqHHBBH", sequence, now, len(key), len(topic), 1, 0, 0) + key + topic + message
        length = struct.pack("<I", len(body))
        frame = b"ESR1" + length + struct.pack("<I", zlib.crc32(length + body)) + body
        if out is None or size + len(frame) > segment_bytes:
            if out:
                out.close()
            out = open(directory / f"{segment:020d}.seg", "wb")
            segment, size = segment + 1, 0
        out.write(frame)
        size += len(frame)
        written += len(frame)
        sequence += 1
    out.close()
    return sequence


def replay(agent: Agent, broker: Broker, timeout: float = 1800):
    """Starts the broker and samples RssAnon until the spool is empty; returns (at connect, peak, after, seconds)."""
    pid = agent.process.pid
    broker.start()
    agent.wait_online(timeout=60)
    at_connect = rss_anon_kib(pid)
    peak = at_connect
    began = time.monotonic()
    while True:
        peak = max(peak, rss_anon_kib(pid))
        status = agent.status()
        if status and status["metrics"]["spool"]["records"] == 0:
            break
        if time.monotonic() - began > timeout:
            raise SystemExit(f"the replay did not finish in {timeout:.0f} s")
        time.sleep(0.2)
    took = time.monotonic() - began
    time.sleep(10)
    return at_connect, peak, rss_anon_kib(pid), took


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--outage-minutes", type=float)
    mode.add_argument("--synthetic-mb", type=float)
    parser.add_argument("--devices", type=int, default=5)
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args()

    work = make_work("elf-replaymem-")
    processes = Processes()
    try:
        broker = Broker(processes, work)
        broker.start()
        (work / "agent").mkdir()
        if args.outage_minutes is not None:
            bus = Bus(processes, work)
            Simulator(processes, bus, work, devices=args.devices)
            agent = Agent(processes, work / "agent", broker_port=broker.port, bus_address=bus.address,
                          devices=args.devices, spool={"segment_bytes": 4 << 20},
                          publish={"metrics_interval_s": 10})
            agent.start()
            agent.wait_streaming(args.devices)
            time.sleep(60)
            steady = rss_anon_kib(agent.process.pid)
            broker.stop()
            time.sleep(args.outage_minutes * 60)
            before = rss_anon_kib(agent.process.pid)
            spooled = agent.status()["metrics"]["spool"]["bytes"]
            label = f"{args.outage_minutes:g}-minute outage, {args.devices} wristbands"
        else:
            agent = Agent(processes, work / "agent", broker_port=broker.port,
                          bus_address="unix:path=/nonexistent-bus", api_key=False,
                          spool={"segment_bytes": 4 << 20})
            agent.start()
            agent.wait_online()
            time.sleep(3)
            steady = rss_anon_kib(agent.process.pid)
            assert agent.stop() == 0
            records = write_synthetic_spool(agent.spool_dir, int(args.synthetic_mb * 1e6))
            (agent.spool_dir / "cursor").unlink(missing_ok=True)
            broker.stop()
            agent.start()
            agent.wait_status()
            time.sleep(2)
            before = rss_anon_kib(agent.process.pid)
            spooled = agent.status()["metrics"]["spool"]["bytes"]
            label = f"synthetic backlog, {records} records"
        at_connect, peak, after, took = replay(agent, broker)
        assert agent.stop() == 0
        mb = lambda kib: kib / 1024  # noqa: E731
        result = {
            "backlog": label, "spooled_bytes": spooled, "replay_seconds": round(took, 1),
            "rss_anon_mib": {"steady": round(mb(steady), 2), "before_replay": round(mb(before), 2),
                             "at_connect": round(mb(at_connect), 2), "peak": round(mb(peak), 2),
                             "after": round(mb(after), 2)},
            "peak_over_steady_mib": round(mb(peak - steady), 2),
        }
        print(f"| backlog | spooled | replay | RssAnon steady | before replay | peak | 10 s after |\n"
              f"| --- | --- | --- | --- | --- | --- | --- |\n"
              f"| {label} | {spooled / 1e6:.1f} MB | {took:.0f} s | {mb(steady):.1f} MiB | {mb(before):.1f} MiB | "
              f"{mb(peak):.1f} MiB (+{mb(peak - steady):.1f}) | {mb(after):.1f} MiB (+{mb(after - steady):.1f}) |")
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        processes.stop_all()
        remove_work(work)


if __name__ == "__main__":
    main()
