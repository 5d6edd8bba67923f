"""Issue 7: the broker stops for two minutes under load from three wristbands, then returns.

Real processes: a private D-Bus bus, empalink-sim with 3 whitelisted wristbands, mosquitto (stopped and restarted
on the same port), empalinkd in `offline` spool mode with `replay_rate = 200`, and a paho subscriber with a
persistent session (so the broker keeps what arrives while the subscriber itself is reconnecting).

After de-duplication by (`sid`, `stream`, `seq`) every (sid, stream) must be exactly 0..max, first occurrences in
increasing order; replay must stay within `replay_rate` while live data keeps flowing. The outage length can be
shortened for local iteration with FAULTS_OUTAGE_S (the issue's figure, 120 s, is the default).
"""
import os
import subprocess
import time

from faultrig import (Agent, Broker, Bus, Processes, Simulator, Subscriber, data_messages, dedup, make_work,
                      remove_work, serial)

OUTAGE_S = float(os.environ.get("FAULTS_OUTAGE_S", "120"))
REPLAY_RATE = 200
MAX_INFLIGHT = 100


def assert_complete_and_ordered(messages):
    """Every (sid, stream): first occurrences are 0, 1, 2, … in arrival order — no gap, no reordering."""
    streams = dedup(messages)
    assert streams, "no data message arrived"
    problems = []
    for (sid, stream), seqs in sorted(streams.items()):
        if sorted(seqs) != list(range(max(seqs) + 1)):
            missing = sorted(set(range(max(seqs) + 1)) - set(seqs))
            problems.append(f"{sid}/{stream}: {len(missing)} missing of 0..{max(seqs)}, first {missing[:10]}")
        elif seqs != sorted(seqs):
            first = next(i for i in range(1, len(seqs)) if seqs[i] < seqs[i - 1])
            problems.append(f"{sid}/{stream}: order broken at arrival {first}: {seqs[max(0, first - 3):first + 3]}")
    assert not problems, "\n".join(problems)
    return streams


def press_tag(bus_address, device):
    subprocess.run(["busctl", f"--address={bus_address}", "call", "org.empalink.Simulator",
                    "/org/empalink/simulator", "org.empalink.Simulator1", "PressTag", "s", device],
                   check=True, capture_output=True, timeout=10)


def test_broker_outage_loses_nothing_keeps_order_and_bounds_replay():
    work = make_work("elf-outage-")
    processes = Processes()
    subscriber = None
    try:
        # No random tags: the tags this test presses during replay are then the only ones, with no backlog.
        scenario = work / "scenario.toml"
        scenario.write_text("[physiology]\ntags_per_hour = 0\n")
        bus = Bus(processes, work)
        sim = Simulator(processes, bus, work, devices=3, scenario=scenario)
        broker = Broker(processes, work)
        broker.start()
        subscriber = Subscriber(broker)
        agent = Agent(processes, work, broker_port=broker.port, bus_address=bus.address,
                      spool={"mode": '"offline"', "replay_rate": REPLAY_RATE},
                      mqtt={"max_inflight": MAX_INFLIGHT})
        agent.start()
        agent.wait_online()
        agent.wait_streaming(3)
        time.sleep(5)

        # The outage.
        broker.stop()
        stopped = time.monotonic()
        stopped_wall = time.time()
        at_stop = agent.status()["metrics"]["mqtt"]
        while time.monotonic() - stopped < OUTAGE_S:
            status = agent.status()
            assert status is not None, "the agent stopped answering its control socket during the outage"
            time.sleep(1)
        spooled = agent.status()["metrics"]["spool"]
        assert spooled["records"] > 0, f"nothing was spooled during the outage: {spooled}"
        assert all(d["status"] == "connected" for d in agent.status()["devices"].values())

        broker.start()
        restarted = time.monotonic()
        agent.wait_online(timeout=90)
        reconnected = time.monotonic()
        subscriber.connected.wait(10)

        # Replay: sample the agent's replayed counter, press tags while the backlog drains.
        samples = []
        tags_pressed = None
        deadline = time.monotonic() + 240
        while True:
            status = agent.status()
            spool = status["metrics"]["spool"]
            samples.append((time.monotonic(), spool["replayed"], spool["records"]))
            if tags_pressed is None and time.monotonic() - reconnected > 1 and spool["records"] > REPLAY_RATE:
                tags_pressed = (time.monotonic(), time.time())
                for index in (1, 2, 3):
                    press_tag(bus.address, serial(index))
            if spool["records"] == 0 and time.monotonic() - reconnected > 5:
                break
            assert time.monotonic() < deadline, f"replay did not finish: {spool}"
            time.sleep(0.25)
        drained = time.monotonic()
        time.sleep(3)
        at_end = agent.status()["metrics"]["mqtt"]
        assert agent.stop() == 0
        agent.assert_no_trap()
        subscriber.fence(broker.port)
        messages = subscriber.snapshot()
        assert sim.process.poll() is None

        try:
            streams = assert_complete_and_ordered(messages)
        except AssertionError as error:
            bvp = sorted((body["t"] - stopped_wall, body["seq"]) for _, _, stream, _, body in data_messages(messages)
                         if stream == "bvp")
            raise AssertionError(f"{error}\nMQTT at the stop: {at_stop}; at the end: {at_end}; BVP (t - stop, seq) "
                                 f"around the stop: {[x for x in bvp if -4 < x[0] < 2]}") from None

        # Replay rate, from the agent's side: replayed messages per second over the replay.
        replayed = [(t, n) for t, n, _ in samples]
        span = replayed[-1][0] - replayed[0][0]
        total = replayed[-1][1] - replayed[0][1]
        agent_rate = total / span if span > 0 else 0.0
        window = []
        for i, (t, n) in enumerate(replayed):
            j = next((k for k in range(i, len(replayed)) if replayed[k][0] - t >= 2.0), None)
            if j is not None:
                window.append((replayed[j][1] - n) / (replayed[j][0] - t))
        # From the broker's side: data messages arriving per 1 s window between reconnect+1 s and the drain.
        # (libmosquitto resends its in-flight window at once on reconnect: that first second is excluded.)
        arrivals = [a for a, *_ in data_messages(messages) if reconnected + 1 <= a < drained]
        per_second = {}
        for a in arrivals:
            per_second[int(a - reconnected)] = per_second.get(int(a - reconnected), 0) + 1
        full_seconds = [count for second, count in per_second.items() if second + 1 <= drained - reconnected - 1]
        peak = max(full_seconds, default=0)

        # Live data during the replay: the pressed tags (streams with no backlog) and the metrics (1 s).
        tag_arrivals = [(a, body) for a, sid, stream, seq, body in data_messages(messages) if stream == "tag"]
        assert tags_pressed is not None, "the backlog drained before tags could be pressed: raise the outage"
        live_tags = [a for a, _ in tag_arrivals if tags_pressed[0] <= a < drained]
        tag_latency = [a - tags_pressed[0] for a in live_tags]
        metrics_times = [a for a, _, topic, _ in messages if topic.endswith("/metrics") and reconnected <= a < drained]
        metrics_gap = max((b - a for a, b in zip(metrics_times, metrics_times[1:])), default=float("inf"))

        print(f"\nbroker outage {OUTAGE_S:.0f} s: {spooled['records']} records spooled; agent back online "
              f"{reconnected - restarted:.1f} s after the broker restarted; backlog drained in "
              f"{drained - reconnected:.1f} s")
        print(f"replay rate (agent counter): mean {agent_rate:.1f}/s, max over 2 s windows "
              f"{max(window, default=0):.1f}/s (replay_rate = {REPLAY_RATE})")
        print(f"arrivals during replay: peak {peak}/s over full 1 s windows, {len(arrivals)} messages; "
              f"{len(streams)} (sid, stream) complete and ordered; {len(messages)} messages received")
        print(f"live during replay: {len(live_tags)} pressed tags arrived after {[round(x, 2) for x in tag_latency]} s "
              f"while the backlog drained; largest metrics gap {metrics_gap:.1f} s")

        assert REPLAY_RATE * 0.6 <= agent_rate <= REPLAY_RATE * 1.1, f"mean replay rate {agent_rate:.1f}/s"
        assert max(window) <= REPLAY_RATE * 1.15, f"replay burst {max(window):.1f}/s over 2 s"
        assert peak <= REPLAY_RATE * 1.15 + 10, f"{peak} data messages arrived in one second"
        assert len(live_tags) == 3 and max(tag_latency) < 3.0, \
            f"pressed tags did not flow live during the replay: {tag_arrivals}"
        assert metrics_gap <= 3.0, f"metrics stalled for {metrics_gap:.1f} s during the replay"
        assert {sid_stream[1] for sid_stream in streams} >= {"bvp", "acc", "gsr", "temp"}
        assert len({sid for sid, _ in streams}) >= 3
    finally:
        if subscriber:
            subscriber.close()
        processes.stop_all()
        remove_work(work)
