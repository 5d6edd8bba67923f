"""Issue 6 acceptance, the MQTT contract of the real agent (SPEC §10, §12): real dbus-daemon, empalink-sim with three
wristbands (two whitelisted), mosquitto and empalinkd under a test-owned NOTIFY_SOCKET.

One run (module fixture) records everything a subscriber sees until IBI and heart rate have flowed, then ends the
agent with SIGTERM and the simulator (which then writes its truth); each test checks one promise on that record.
"""
import collections
import json
import re
import signal
import time

import jsonschema
import pytest

from agent_rig import AGENT, E4_STREAMS, PREFIX, SCHEMAS, Rig, schema_for, serial, wait_until

WHITELISTED = (1, 2)
STRANGER = 3
SAMPLED = {"bvp": 64, "gsr": 4, "temp": 4, "acc": 32}
DECIMALS = {"bvp": 3, "gsr": 4, "temp": 2}
TRUTH = {"bvp": ("bvp", "value"), "gsr": ("gsr", "microsiemens"), "temp": ("temp", "celsius")}


@pytest.fixture(scope="module")
def run():
    """The recorded run: messages, notify datagrams, retained snapshots, shutdown timing, truth."""
    record = {}
    with Rig(devices=3, notify=True) as rig:
        rig.start_agent(rig.config_text(list(WHITELISTED), bvp=None), watchdog_usec=1_000_000)
        record["started"] = time.monotonic()
        record["connected"] = {k: bool(rig.wait_connected(k, 20)) for k in WHITELISTED}
        for k in WHITELISTED:
            rig.sim_call("PressTag", f"string:{serial(k)}")
        rig.subscriber.publish(rig.topic("cmd"), json.dumps({"rescan": True}))
        # IBI needs about 20 s of BVP; HR from beats follows at 1 Hz (spectral HR may come before, after 8 s).
        record["hr_seen"] = bool(wait_until(
            lambda: all(any(m.json and m.json.get("source") == "beats"
                            for m in rig.subscriber.all(rig.topic(serial(k), "hr")))
                        and rig.subscriber.all(rig.topic(serial(k), "ibi")) for k in WHITELISTED),
            50, interval=0.25))
        record["stats"] = rig.sim_stats()
        record["retained_online"] = rig.retained(f"{PREFIX}/{AGENT}/#")

        sigterm = time.monotonic()
        record["sigterm"] = sigterm
        rig.agent.send_signal(signal.SIGTERM)
        try:
            record["exit_code"] = rig.agent.wait(timeout=10)
        except Exception:
            record["exit_code"] = None
        record["exit_seconds"] = time.monotonic() - sigterm
        wait_until(lambda: rig.subscriber.all(rig.topic("status"))[-1].json == {"state": "offline"}, 5)
        record["retained_offline"] = rig.retained(rig.topic("status"))
        time.sleep(0.3)
        record["messages"] = rig.subscriber.all()
        record["notify"] = rig.notify.all()
        record["sim_exit"] = rig.stop_sim()
        files = ("sessions", "bvp", "gsr", "temp", "acc", "beats")
        record["truth"] = {k: {name: rig.read_truth(k, name) for name in files} for k in WHITELISTED}
        record["log"] = rig.agent_log_text()
    return record


def by_topic(run):
    topics = collections.defaultdict(list)
    for message in run["messages"]:
        topics[message.topic].append(message)
    return topics


def topic(*parts):
    return "/".join((PREFIX, AGENT) + parts)


def test_whitelisted_wristbands_connect_and_stream(run):
    assert run["connected"] == {1: True, 2: True}, run["log"]
    assert run["hr_seen"], "no IBI and heart rate from beats within 50 s of connecting"


def test_every_topic_appears_and_validates_against_its_schema(run):
    topics = by_topic(run)
    expected = {topic("status"), topic("devices"), topic("metrics"), topic("cmd", "result")}
    for k in WHITELISTED:
        expected.add(topic(serial(k), "status"))
        expected.update(topic(serial(k), stream) for stream in E4_STREAMS)
    missing = expected - set(topics)
    assert not missing, f"topics never published: {sorted(missing)}"
    for name, messages in topics.items():
        schema = schema_for(name)
        assert schema != "unknown", f"topic outside SPEC §10: {name}"
        if schema is None:
            continue
        validator = jsonschema.Draft202012Validator(SCHEMAS[schema])
        for message in messages:
            assert message.json is not None, f"{name}: not JSON: {message.payload!r}"
            errors = [error.message for error in validator.iter_errors(message.json)]
            assert not errors, f"{name}: {message.payload[:300]} violates {schema}: {errors}"


def test_every_message_carries_the_json_content_type(run):
    # SPEC §10: MQTT v5 sets content-type application/json (the Last Will included, checked in test_agent_reload).
    wrong = {m.topic: m.content_type for m in run["messages"]
             if m.topic != topic("cmd") and m.content_type != "application/json"}
    assert not wrong, f"messages without content-type application/json: {wrong}"


def test_metrics_report_spool_bytes_records_dropped_and_oldest(run):
    metrics = [m.json for m in by_topic(run)[topic("metrics")]]
    assert metrics
    spool = metrics[-1]["spool"]
    for word in ("bytes", "records", "dropped", "oldest"):
        assert any(word in key for key in spool), f"metrics.spool has no {word} field: {spool}"


def test_metrics_show_every_stream_subscribed_through_acquire_notify(run):
    # The simulator grants AcquireNotify like bluetoothd does: every one of the six notifying streams of each
    # connection is a socket, none fell back to StartNotify.
    devices = [m.json for m in by_topic(run)[topic("metrics")]][-1]["devices"]
    for k in WHITELISTED:
        device = devices[serial(k)]
        assert device["notify_fallbacks"] == 0, device
        assert device["notify_acquired"] >= 6, device


def test_metrics_arrive_every_interval(run):
    arrivals = [m.arrival for m in by_topic(run)[topic("metrics")] if m.arrival < run["sigterm"]]
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    assert len(gaps) >= 10 and all(0.7 <= gap <= 1.3 for gap in gaps), f"metrics_interval_s = 1: gaps {gaps}"


def test_command_result_answers_the_rescan(run):
    results = [m.json for m in by_topic(run)[topic("cmd", "result")]]
    assert results and results[0]["ok"] is True, results


def test_seq_counts_from_zero_without_gaps_per_sid_and_stream(run):
    for k in WHITELISTED:
        for stream in E4_STREAMS:
            sequences = collections.defaultdict(list)
            for message in by_topic(run)[topic(serial(k), stream)]:
                sequences[message.json["sid"]].append(message.json["seq"])
            assert sequences, f"{serial(k)}/{stream}: nothing published"
            for sid, seqs in sequences.items():
                assert seqs == list(range(len(seqs))), f"{serial(k)}/{stream} sid {sid}: seq {seqs}"


def test_one_session_per_device_and_sid_matches_its_status(run):
    for k in WHITELISTED:
        sids = {m.json["sid"] for stream in E4_STREAMS for m in by_topic(run)[topic(serial(k), stream)]}
        assert len(sids) == 1, f"{serial(k)}: sids {sids}"
        connected = [m.json for m in by_topic(run)[topic(serial(k), "status")] if m.json["status"] == "connected"]
        assert connected and connected[-1]["sid"] in sids
        assert connected[-1]["label"] == f"bed {k}"


def published_samples(run, k, stream):
    """[(t, value)] in seq order: sample i of a message at t0 + i/fs."""
    messages = sorted(by_topic(run)[topic(serial(k), stream)], key=lambda m: m.json["seq"])
    samples = []
    for message in messages:
        body = message.json
        for index, value in enumerate(body["v"]):
            samples.append((body["t"] + index / body["fs"], value))
    return samples


@pytest.mark.parametrize("stream", ["bvp", "gsr", "temp", "acc"])
def test_samples_equal_the_simulators_truth(run, stream):
    assert run["sim_exit"] == 0
    fs = SAMPLED[stream]
    for k in WHITELISTED:
        truth = run["truth"][k]
        assert len(truth["sessions"]) == 1, f"{serial(k)}: sessions {truth['sessions']}"
        rows = [row for row in truth[stream] if row["session"] == "1"]
        assert all(row["status"] == "0" for row in rows), f"{serial(k)}/{stream}: loss in an undisturbed run"
        samples = published_samples(run, k, stream)
        assert len(samples) >= fs * 10, f"{serial(k)}/{stream}: {len(samples)} samples in a run of over 20 s"
        assert len(samples) <= len(rows), f"{serial(k)}/{stream}: more samples published than generated"
        for index, ((t, value), row) in enumerate(zip(samples, rows)):
            where = f"{serial(k)}/{stream} sample {index}"
            assert abs(t - float(row["t"])) <= 1 / fs, f"{where}: t {t:.6f} vs truth {row['t']}"
            if stream == "acc":
                assert value == [int(row["x"]), int(row["y"]), int(row["z"])], f"{where}: {value} vs {row}"
            else:
                column = TRUTH[stream][1]
                expected = float(row[column])
                # Published with DECIMALS digits: within half a unit of the last digit (plus float noise). BVP is
                # published filtered by default (publish.bvp, SPEC §19): with the wrists at rest, as here, the
                # artefact filter's weights stay near zero and it is the decoded BVP within a fraction of a count
                # (measured: median 0.02, largest 0.3 of a 94-count pulse); the rig's other tests use "raw".
                tolerance = 0.5 * 10 ** -DECIMALS[stream] + 1e-6 if stream != "bvp" else 1.0
                assert abs(value - expected) <= tolerance, f"{where}: {value} vs truth {expected}"


def test_status_is_retained_online_while_running(run):
    status = [m for m in run["retained_online"] if m.topic == topic("status")]
    assert len(status) == 1 and status[0].json["state"] == "online" and status[0].json["mode"] == "active"
    devices = [m for m in run["retained_online"] if m.topic == topic("devices")]
    assert len(devices) == 1
    for k in WHITELISTED:
        retained = [m for m in run["retained_online"] if m.topic == topic(serial(k), "status")]
        assert len(retained) == 1 and retained[0].json["status"] == "connected"


def test_only_whitelisted_wristbands_are_ever_connected(run):
    stranger = serial(STRANGER)
    assert not [m for m in run["messages"] if m.topic.startswith(topic(stranger) + "/")], \
        "a non-whitelisted wristband got topics"
    listings = [m.json for m in by_topic(run)[topic("devices")]]
    seen = [listing[stranger] for listing in listings if stranger in listing]
    assert seen, "the devices topic never listed the third wristband"
    assert all(entry["allowed"] is False for entry in seen)
    assert listings[-1][serial(1)]["allowed"] is True and listings[-1][serial(2)]["allowed"] is True
    devices = run["stats"]["devices"]
    assert devices[stranger]["connects"] == 0 and not devices[stranger]["connected"]
    assert all(devices[serial(k)]["connected"] for k in WHITELISTED)


def test_sigterm_publishes_offline_retained_and_exits_0_within_5_s(run):
    assert run["exit_code"] == 0, run["log"][-2000:]
    assert run["exit_seconds"] < 5, f"took {run['exit_seconds']:.2f} s"
    status = by_topic(run)[topic("status")]
    assert status[-1].json == {"state": "offline"}
    retained = run["retained_offline"]
    assert len(retained) == 1 and retained[0].json == {"state": "offline"}
    for k in WHITELISTED:
        assert by_topic(run)[topic(serial(k), "status")][-1].json["status"] == "disconnected"


def test_systemd_ready_watchdog_and_stopping(run):
    lines = [(t, line) for t, text in run["notify"] for line in text.split("\n")]
    ready = [t for t, line in lines if line == "READY=1"]
    watchdog = [t for t, line in lines if line == "WATCHDOG=1"]
    stopping = [t for t, line in lines if line == "STOPPING=1"]
    assert len(ready) == 1, lines[:10]
    # STATUS carries device counts (SPEC §12): both whitelisted wristbands connected, at some point.
    assert any(line.startswith("STATUS=") and re.search(r"\b2/2\b", line) for _, line in lines), lines[-10:]
    # WATCHDOG_USEC=1000000: pings at least every second for the whole run, the first right after READY.
    running = [t for t in watchdog if t < run["sigterm"]]
    span = run["sigterm"] - ready[0]
    assert span > 10
    assert len(running) >= span / 1.0, f"{len(running)} WATCHDOG=1 in {span:.1f} s"
    gaps = [b - a for a, b in zip(running, running[1:])]
    assert max(gaps) < 1.0, f"longest watchdog gap {max(gaps):.2f} s"
    assert len(stopping) == 1 and stopping[0] >= run["sigterm"], "STOPPING=1 must follow SIGTERM"



def test_ibi_and_hr_follow_the_true_beats(run):
    """The edge IBI engine on live data: each IBI ends at a true pulse onset (foot) and is close to the true
    interval ending there; HR agrees with the true recent rate."""
    for k in WHITELISTED:
        # `ibi` is the interval ending at the foot (the E4 convention, as ours); empty for the simulator's first beat.
        beats = [(float(b["foot_time"]), float(b["ibi"]) if b["ibi"] else None)
                 for b in run["truth"][k]["beats"] if b["session"] == "1"]
        assert beats, f"{serial(k)}: no truth beats"
        errors = []
        for message in by_topic(run)[topic(serial(k), "ibi")]:
            for t, ibi in message.json["v"]:
                foot, true_ibi = min(beats, key=lambda beat: abs(beat[0] - t))
                assert true_ibi is not None, f"{serial(k)}: IBI at {t:.3f} ends at the first beat"
                assert abs(foot - t) <= 0.1, f"{serial(k)}: IBI at {t:.3f} is {t - foot:+.3f} s from a true beat"
                # Both feet on the 64 Hz grid, under the simulated baseline wander and the agent's stream clock:
                # seen up to 0.053 s, typically 0.01-0.03 s. A missed or extra beat would be off by 0.3 s or more.
                assert abs(ibi - true_ibi) <= 0.1, f"{serial(k)}: IBI {ibi} vs true {true_ibi:.4f} at {t:.3f}"
                errors.append(abs(ibi - true_ibi))
        assert len(errors) >= 3, f"{serial(k)}: {len(errors)} IBIs"
        assert sum(errors) / len(errors) <= 0.04, f"{serial(k)}: IBI errors {errors}"
        from_beats = 0
        for message in by_topic(run)[topic(serial(k), "hr")]:
            assert len(message.json["confidence"]) == len(message.json["v"]), message.payload
            if message.json["source"] != "beats":
                continue  # held to the truth in test_spectral_hr_follows_the_true_beats
            assert all(c == 1 for c in message.json["confidence"]), message.payload
            for t, bpm in message.json["v"]:
                recent = [ibi for foot, ibi in beats if t - 10 <= foot <= t and ibi is not None]
                assert recent
                reference = 60 / (sum(recent) / len(recent))
                assert abs(bpm - reference) <= 0.1 * reference, f"{serial(k)}: HR {bpm} vs true {reference:.1f}"
                from_beats += 1
        assert from_beats, f"{serial(k)}: no heart rate from beats"


def test_spectral_hr_follows_the_true_beats(run):
    """Spectral values at rest, before the IBI engine has beats, are near the true rate too (issue #18: the estimator
    was once seen on the simulator pulse's 3rd harmonic at start-up, 202.2 bpm against a true 67.4)."""
    for k in WHITELISTED:
        beats = [(float(b["foot_time"]), float(b["ibi"])) for b in run["truth"][k]["beats"]
                 if b["session"] == "1" and b["ibi"]]
        for message in by_topic(run)[topic(serial(k), "hr")]:
            if message.json["source"] != "spectral":
                continue
            for t, bpm in message.json["v"]:
                recent = [ibi for foot, ibi in beats if t - 10 <= foot <= t]
                if not recent:
                    continue
                reference = 60 / (sum(recent) / len(recent))
                assert abs(bpm - reference) <= 0.1 * reference, f"{serial(k)}: HR {bpm} vs true {reference:.1f}"
