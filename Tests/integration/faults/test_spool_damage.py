"""Issue 7: the real agent on a spool damaged 200 ways.

A first agent run with the broker down (three simulated wristbands, `offline` mode, 64 KiB segments) writes a
spool of known records. Each of 200 cases, from a fixed seed, damages a fresh copy of it — truncation at a
random offset, random bytes flipped, a segment deleted, the cursor corrupted, or several at once — and starts
empalinkd on it with the broker up. Every case must:

- start: the control socket's `status` answers and MQTT is online;
- deliver every intact record (a frame whose magic, length and CRC still hold, found by an independent Python
  scan of the documented format) byte-identical, and nothing that was not in the original spool;
- report what was lost in its recovery log line (lost bytes / missing records / a corrupt cursor), with the
  bytes also in the metrics' `recovery_lost_bytes`;
- never trap: exit 0 on SIGTERM, no "Fatal error" or trap in its output.

Cases run one after another on one broker and subscriber (about a second each); a fence message separates them.
"""
import os
import pathlib
import random
import re
import shutil
import time

from faultrig import (Agent, Broker, Bus, Processes, Simulator, Subscriber, free_port, make_work, read_spool,
                      remove_work, wait_until)

CASES = int(os.environ.get("FAULTS_DAMAGE_CASES", "200"))
SEED = 20261129


def damage(directory: pathlib.Path, rng: random.Random, kind: str) -> str:
    """Damages the spool in `directory`; returns a description."""
    segments = sorted(directory.glob("*.seg"))
    cursor = directory / "cursor"
    done = []
    kinds = [kind] if kind != "combined" else rng.sample(["truncate", "flip", "delete", "cursor"], rng.randint(2, 4))
    for what in kinds:
        segments = sorted(directory.glob("*.seg"))
        if what == "truncate" and segments:
            segment = rng.choice(segments)
            size = segment.stat().st_size
            cut = rng.randrange(0, size) if size else 0
            os.truncate(segment, cut)
            done.append(f"truncate {segment.name} at {cut}/{size}")
        elif what == "flip" and segments:
            flips = []
            for _ in range(rng.randint(1, 8)):
                segment = rng.choice(segments)
                data = bytearray(segment.read_bytes())
                if not data:
                    continue
                offset = rng.randrange(len(data))
                data[offset] ^= rng.randint(1, 255)
                segment.write_bytes(data)
                flips.append(f"{segment.name}@{offset}")
            done.append("flip " + " ".join(flips))
        elif what == "delete" and segments:
            segment = rng.choice(segments)
            segment.unlink()
            done.append(f"delete {segment.name}")
        elif what == "cursor":
            style = rng.choice(["garbage", "truncate", "flip", "delete", "empty"])
            if style == "garbage":
                cursor.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))))
            elif style == "truncate" and cursor.exists():
                os.truncate(cursor, rng.randrange(max(1, cursor.stat().st_size)))
            elif style == "flip" and cursor.exists():
                data = bytearray(cursor.read_bytes())
                data[rng.randrange(len(data))] ^= rng.randint(1, 255)
                cursor.write_bytes(data)
            elif style == "delete" and cursor.exists():
                cursor.unlink()
            else:
                cursor.write_bytes(b"")
            done.append(f"cursor {style}")
    return "; ".join(done)


def test_agent_survives_and_delivers_every_intact_record_of_200_damaged_spools():
    work = make_work("elf-damage-")
    processes = Processes()
    subscriber = None
    try:
        # 1. The known spool: the broker is down (a port nobody listens on) while three wristbands stream.
        bus = Bus(processes, work)
        Simulator(processes, bus, work, devices=3)
        original = work / "original"
        (work / "writer").mkdir()
        writer = Agent(processes, work / "writer", broker_port=free_port(), bus_address=bus.address, spool_dir=original,
                       spool={"mode": '"offline"', "segment_bytes": 65536})
        writer.start()
        writer.wait_streaming(3)
        wait_until(lambda: len(list(original.glob("*.seg"))) >= 4, 90, "a spool of 4 segments", interval=0.5)
        assert writer.stop() == 0
        writer.assert_no_trap()
        processes.stop_all()
        records = read_spool(original)
        assert len(records) > 300, f"only {len(records)} records spooled"
        by_message = {message: sequence for sequence, (_, _, _, _, message) in records.items()}
        assert len(by_message) == len(records), "spooled messages are not unique (sid, seq)"

        # 2. The broker and subscriber for every case; an agent without Bluetooth (no bus, no API key).
        broker = Broker(processes, work)
        broker.start()
        subscriber = Subscriber(broker)
        case_dir = work / "case"
        case_dir.mkdir()
        agent = Agent(processes, case_dir, broker_port=broker.port, bus_address="unix:path=/nonexistent-bus",
                      spool_dir=case_dir / "spool", api_key=False,
                      spool={"replay_rate": 1000000}, mqtt={"max_inflight": 1000})
        rng = random.Random(SEED)
        kinds = ["truncate"] * 50 + ["flip"] * 70 + ["delete"] * 25 + ["cursor"] * 30 + ["combined"] * 25
        kinds = (kinds * (CASES // len(kinds) + 1))[:CASES]
        rng.shuffle(kinds)
        outcomes = {"all intact": 0, "partly lost": 0}
        recovery_times = []
        lost_records_total = 0
        started_all = time.monotonic()
        for number, kind in enumerate(kinds):
            shutil.rmtree(agent.spool_dir, ignore_errors=True)
            shutil.copytree(original, agent.spool_dir)
            description = damage(agent.spool_dir, rng, kind)
            cursor_damaged = "cursor" in description
            intact = {message for _, _, _, _, message in read_spool(agent.spool_dir).values()
                      if message in by_message}
            lost = set(by_message) - intact
            context = f"case {number} ({kind}: {description})"
            # The scan itself is checked where the answer is known: a flipped byte costs at most its frame, a
            # cursor costs no record, a deleted segment costs exactly its records.
            if kind == "flip":
                assert len(lost) <= description.count("@"), f"{context}: {len(lost)} lost to the flips"
            elif kind == "cursor":
                assert not lost, f"{context}: {len(lost)} records lost to a cursor"
            elif kind == "delete":
                name = description.split()[-1]
                assert len(lost) == sum(1 for r in records.values() if r[0] == name), context

            seen_before = subscriber.count()
            began = time.monotonic()
            agent.start()
            status = agent.wait_online(timeout=20)
            received = set()

            def delivered_all():
                received.update(m[3] for m in subscriber.snapshot()[seen_before:])
                return intact <= received
            wait_until(delivered_all, 30, f"{context}: delivery of {len(intact - received)} intact records")
            recovery_times.append(time.monotonic() - began)
            status = agent.wait_status(lambda s: s["metrics"]["spool"]["records"] == 0, 20,
                                       f"{context}: an empty spool")
            code = agent.stop()
            assert code == 0, f"{context}: exit {code}\n{agent.tail()}"
            agent.assert_no_trap()
            subscriber.fence(broker.port)
            arrived = {m[3] for m in subscriber.snapshot()[seen_before:]
                       if m[2].split("/")[-1] in ("bvp", "acc", "gsr", "temp", "ibi", "hr", "battery", "tag")}
            invented = arrived - set(by_message)
            assert not invented, f"{context}: {len(invented)} messages that were never spooled: {list(invented)[:2]}"

            log = agent.log.read_text(errors="replace")
            summary = re.search(r"spool \S+: (.*)", log)
            assert summary, f"{context}: no recovery line in the log\n{log[:2000]}"
            summary = summary.group(1)
            lost_bytes = status["metrics"]["spool"]["recovery_lost_bytes"]
            reported = "lost" in summary or "missing" in summary
            if cursor_damaged:
                assert "cursor valid" not in summary, f"{context}: damaged cursor not reported: {summary}"
            if lost and not cursor_damaged:
                assert reported, f"{context}: {len(lost)} records lost, not reported: {summary}"
            if "lost " in summary:
                assert lost_bytes > 0, f"{context}: summary reports lost bytes, metrics do not: {lost_bytes}"
            outcomes["partly lost" if lost else "all intact"] += 1
            lost_records_total += len(lost)
            agent.log.unlink()
            agent.runs = 0
        elapsed = time.monotonic() - started_all
        recovery_times.sort()
        print(f"\nspool damage: {CASES} cases on {len(records)} records in {len(list(original.glob('*.seg')))} "
              f"segments; {outcomes}; {lost_records_total} damaged records in all; every case started, "
              f"delivered every intact record and exited 0; start-to-delivered median "
              f"{recovery_times[len(recovery_times) // 2]:.2f} s, max {recovery_times[-1]:.2f} s; {elapsed:.0f} s")
    finally:
        if subscriber:
            subscriber.close()
        processes.stop_all()
        remove_work(work)
