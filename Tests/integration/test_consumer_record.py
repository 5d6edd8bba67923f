"""Issue 16, SPEC §17.1: `empalinkctl record` against real processes (bus, simulator, mosquitto, empalinkd), read back
by a real, independent reader of E4 connect exports — the PyPI package devicely, in its own venv (it pins pandas < 2)
— and compared with the simulator's truth: start times, rates, row counts, every sample on its row.

The session lasts EMPALINK_RECORD_SECONDS (default 70: `make test` stays fast; the simulator has no faster-than-real
time, since the agent timestamps samples by their arrival). With packet loss, a disconnect and tags; run it with
EMPALINK_RECORD_SECONDS=600 for the 10-minute session of the issue.
"""
import bisect
import json
import os
import pathlib
import signal
import subprocess
import time
import zipfile

from agent_rig import SCENARIO, Rig, serial, stop, wait_until
from conftest import ROOT
from consumer_rig import start_ctl

FILES = ["ACC.csv", "BVP.csv", "EDA.csv", "HR.csv", "IBI.csv", "TEMP.csv", "info.txt", "tags.csv"]
RATES = {"ACC": 32.0, "BVP": 64.0, "EDA": 4.0, "TEMP": 4.0, "HR": 1.0}
# The edge's published decimals (Docs/mqtt.md) bound how closely a value can equal the truth.
TOLERANCE = {"BVP": 0.5e-3, "EDA": 0.5e-4, "TEMP": 0.5e-2, "ACC": 0}
TRUTH = {"ACC": ("acc", ["x", "y", "z"]), "BVP": ("bvp", ["value"]), "EDA": ("gsr", ["microsiemens"]),
         "TEMP": ("temp", ["celsius"])}

READER = r"""
import json, sys
import devicely
r = devicely.EmpaticaReader(sys.argv[1])
out = {"start": {k: v.value / 1e9 for k, v in r.start_times.items()}, "rates": r.sample_freqs}
for name in ("ACC", "BVP", "EDA", "TEMP", "HR"):
    frame = getattr(r, name)
    out[name] = [] if frame is None else frame.values.tolist()
out["IBI"] = [] if r.IBI is None else [[t.value / 1e9, v] for t, v in zip(r.IBI.index, r.IBI["IBI"])]
out["tags"] = [] if r.tags is None else [t.value / 1e9 for t in r.tags]
print(json.dumps(out))
"""


def devicely_python():
    path = os.environ.get("EMPALINK_DEVICELY_PYTHON", str(ROOT / ".venv-devicely" / "bin" / "python"))
    assert pathlib.Path(path).exists(), f"{path} is missing: `make deps` creates .venv-devicely"
    return path


def read_with_devicely(zip_path, tmp):
    folder = tmp / (zip_path.stem + "-unzipped")
    with zipfile.ZipFile(zip_path) as archive:
        assert archive.testzip() is None
        assert archive.namelist() == FILES
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_DEFLATED
            data = archive.read(info)
            assert b"\r" not in data and not data.startswith(b"\xef\xbb\xbf"), info.filename
            assert data == b"" or data.endswith(b"\n"), info.filename
        archive.extractall(folder)
    single = [name for name in ("ACC", "BVP", "EDA", "TEMP", "HR")
              if len((folder / f"{name}.csv").read_text().splitlines()) == 3]
    if single:
        # devicely 1.1.1 cannot read a signal file of exactly one sample (its squeeze() makes a scalar of it): such
        # a session (split off less than 11 s after its start) is read here, by the same rules.
        return read_plainly(folder), folder
    result = subprocess.run([devicely_python(), "-c", READER, str(folder)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1]), folder


def read_plainly(folder):
    out = {"start": {}, "rates": {}}
    for name in ("ACC", "BVP", "EDA", "TEMP", "HR"):
        lines = (folder / f"{name}.csv").read_text().splitlines()
        out["start"][name] = float(lines[0].split(", ")[0])
        out["rates"][name] = float(lines[1].split(", ")[0])
        rows = [[float(v) for v in line.split(",")] for line in lines[2:]]
        out[name] = [row if name == "ACC" else row[0] for row in rows]
    lines = (folder / "IBI.csv").read_text().splitlines()
    out["start"]["IBI"] = float(lines[0].split(",")[0])
    out["IBI"] = [[out["start"]["IBI"] + float(a), float(b)] for a, b in (line.split(",") for line in lines[1:])]
    out["tags"] = [float(line) for line in (folder / "tags.csv").read_text().splitlines()]
    return out


def truth_series(rig, name, columns):
    """Delivered truth samples of device 1: sorted (t, values). BVP only up to the first lost packet of each
    simulator session: the edge's decoder integrates deltas and cannot know a lost packet's (Docs/protocol-e4.md),
    so after one its BVP differs from the truth by a decaying offset; it is then compared with what the edge
    published, as every stream is."""
    rows = rig.read_truth(1, name)
    first_loss = {}
    if name == "bvp":
        for r in rows:
            if r["status"] != "0":
                first_loss.setdefault(r["session"], float(r["t"]))
    return sorted((float(r["t"]), [float(r[c]) for c in columns]) for r in rows
                  if r["status"] == "0" and float(r["t"]) < first_loss.get(r["session"], float("inf")))


def published_samples(messages, stream):
    """Every sample the edge published for a sampled stream, de-duplicated by (sid, seq): sorted (t, values)."""
    seen = {}
    for m in messages:
        if m.topic.endswith(f"/{serial(1)}/{stream}") and m.json:
            seen[(m.json["sid"], m.json["seq"])] = m.json
    samples = []
    for payload in seen.values():
        for i, value in enumerate(payload["v"]):
            samples.append((payload["t"] + i / payload["fs"], value if isinstance(value, list) else [value]))
    return sorted(samples)


# What the export's format keeps of a published value (SPEC §17.1: BVP and TEMP %.2f, EDA %.6f, ACC integers).
EXPORT_TOLERANCE = {"BVP": 0.005 + 1e-9, "EDA": 1e-9, "TEMP": 1e-9, "ACC": 0}


def filled_rows(info):
    """The rows info.txt lists as filled by the gap policy, per export file name (ACC, BVP, EDA, TEMP)."""
    rows = {}
    for line in info.splitlines():
        line = line.strip()
        for name in ("ACC", "BVP", "EDA", "TEMP"):
            if line.startswith(f"{name}.csv: "):
                rows[name] = set()
                for item in line.split(": ", 1)[1].split():
                    if item == "none":
                        continue
                    first, _, last = item.partition("-")
                    rows[name].update(range(int(first), int(last or first) + 1))
    return rows


def check_sampled(export, name, published, truth, start, filled, received_from=None, complete=True):
    """Every row is either a sample the edge published — on its own row (start + i/rate within half a sample period:
    never shifted, never two on one row), with its value, which equals the simulator's truth — or a row info.txt
    lists as filled. A published sample may fall on a filled row only when the recorder cannot have received it
    (published before `received_from`, the recorder's restart). Returns the number of filled rows."""
    rows = [row if isinstance(row, list) else [row] for row in export[name]]
    rate = RATES[name]
    if not rows:
        return 0  # a session split off before this stream's first row
    end = start + len(rows) / rate
    # The samples whose time falls on each row. Normally one; two where the edge re-anchored a stream's clock
    # backwards (its later samples overlap earlier ones in time): the recorder then ends the session, so the row
    # holds one of them — which one is what the test cannot know, and both are the truth's samples of that time.
    candidates = {}
    for t, values in published:
        position = (t - start) * rate
        if -0.55 <= position < len(rows) - 0.45:
            # A sample within 0.05 of halfway between two rows is a candidate for both: the recorder fixes a
            # stream's phase by its first sample, and the last bit of a time decides nothing.
            for index in {round(position - 0.05), round(position + 0.05)}:
                if 0 <= index < len(rows):
                    candidates.setdefault(index, []).append((t, values, abs(position - index)))
    placed = set(candidates)
    compared = 0
    for index, options in candidates.items():
        if index in filled:
            clear = [(t, v) for t, v, distance in options if distance < 0.45]
            assert received_from is not None and all(t < received_from for t, _ in clear) or not clear, \
                (name, "a published sample on a filled row", index, clear)
            continue
        matching = [(t, values) for t, values, _ in options
                    if all(abs(a - b) <= EXPORT_TOLERANCE[name] for a, b in zip(rows[index], values))]
        if not matching and not complete and all(distance >= 0.45 for _, _, distance in options):
            # The reference subscriber missed this row's own sample (`complete=False`), and a neighbour that lies
            # about halfway between two rows is a candidate here only by the allowance above: the row is one the
            # reference did not see, not a shifted sample.
            placed.discard(index)
            continue
        assert matching, (name, index, rows[index], options)
        t, values = matching[0]
        t_truth, v_truth = min(truth[max(0, bisect.bisect_left(truth, (t,)) - 1):][:3], key=lambda r: abs(r[0] - t))
        if abs(t_truth - t) >= 0.5 / rate and name == "BVP":
            continue  # after a loss: compared with the published value above
        compared += 1
        assert abs(t_truth - t) < 0.55 / rate, (name, t, t_truth)
        assert all(abs(a - b) <= TOLERANCE[name] + 1e-9 for a, b in zip(values, v_truth)), (name, t, values, v_truth)
    unexplained = set(range(len(rows))) - placed - filled
    # (`complete=False`: the reference subscriber itself may have missed messages — it rides the same broker.)
    assert not unexplained or not complete, (name, "rows neither published nor listed as filled",
                                             sorted(unexplained)[:10])
    assert compared > 0 or len(rows) < 2 * rate, (name, "no sample compared with the truth")
    return len(filled)


def scenario(seconds):
    # Packet loss in each half, one disconnect in the middle, button presses before and after it. Each session
    # begins without loss, so that its BVP can be compared with the truth before the first loss (see truth_series).
    text = SCENARIO + f"""
[[fault]]
at_s = {seconds // 4}
action = "packet_loss"
rate = 0.03
[[fault]]
at_s = {seconds // 2 - 2}
action = "packet_loss"
rate = 0.0
[[fault]]
at_s = {3 * seconds // 4 + 2}
action = "packet_loss"
rate = 0.03
[[fault]]
at_s = {seconds // 2}
action = "disconnect"
"""
    for at in (seconds // 4, seconds // 4 + 2, 3 * seconds // 4):
        text += f'[[fault]]\nat_s = {at}\naction = "tag"\n'
    return text


def test_devicely_reads_the_recorded_sessions_equal_to_the_truth():
    seconds = int(os.environ.get("EMPALINK_RECORD_SECONDS", "70"))
    with Rig(devices=1, seed=3, scenario=scenario(seconds)) as rig:
        out = rig.tmp / "sessions"
        # The recorder first, so that it sees every message the edge publishes.
        recorder, log = start_ctl(rig, "record", "--host", "127.0.0.1", "--port", str(rig.port), "--out", str(out),
                                  log_name="record.log")
        assert wait_until(lambda: "broker connected" in log.read_text(), 10), log.read_text()
        rig.start_agent(rig.config_text([1], batch_ms=250))
        assert rig.wait_connected(1)
        time.sleep(seconds + 2)
        assert stop(recorder) == 0, log.read_text()
        published = rig.subscriber.all()
        rig.stop_sim()
        assert "stopped:" in log.read_text()
        zips = sorted(out.glob("*.zip"))
        infos = [zipfile.ZipFile(z).read("info.txt").decode().split("\n\n")[-2] for z in zips]
        # The disconnect ends a session. So may a jump of the edge's sample clock that no grid can span: the agent
        # re-anchors a stream whose clock drifts 0.5 s from arrival times (SPEC §8; `clock_reanchors` in its metrics).
        assert len(zips) >= 2 and any("closed: the wristband disconnected" in info for info in infos), infos
        for info in infos:
            assert any(reason in info for reason in ("closed: the wristband disconnected", "closed: the recorder stopped",
                                                     "gap the sample grid cannot span")), info
        tag_truth = [float(r["t"]) for r in rig.read_truth(1, "tags")]
        beats = [float(r["ibi"]) for r in rig.read_truth(1, "beats") if r["ibi"]]
        truth_bpm = 60 / (sum(beats) / len(beats))
        published_by = {name: published_samples(published, TRUTH[name][0]) for name in TRUTH}
        truth_by = {name: truth_series(rig, *TRUTH[name]) for name in TRUTH}
        published_ibi = sorted((t, v) for m in published if m.topic.endswith("/ibi") for t, v in m.json["v"])
        total_tags = 0
        total_ibi = 0
        total_hr = 0
        total_filled = 0
        for zip_path in zips:
            export, folder = read_with_devicely(zip_path, rig.tmp)
            start = export["start"]["BVP"]
            assert start == int(start) and zip_path.name == f"{int(start)}_A00101.zip"
            for name in ("ACC", "BVP", "EDA", "TEMP", "IBI"):
                assert export["start"][name] == start, name
            assert export["start"]["HR"] == start + 10
            assert export["rates"] == RATES
            filled = filled_rows((folder / "info.txt").read_text())
            for name in TRUTH:
                total_filled += check_sampled(export, name, published_by[name], truth_by[name], start, filled[name])
            durations = {name: len(export[name]) / RATES[name] for name in TRUTH}
            # Streams end within a packet or two of each other (a TEMP packet spans 2 s).
            assert max(durations.values()) - min(durations.values()) < 4.5, durations
            # HR: one row per second from T+10 to the end of the BVP, no holes, from the edge's engine.
            assert len(export["HR"]) == int(durations["BVP"] - 10 + 0.999)
            # No holes: either the engine gave no estimate in the whole session (all 0) or every second has one.
            if any(h > 0 for h in export["HR"]):
                late = export["HR"][len(export["HR"]) // 2:]
                assert all(h > 0 for h in export["HR"]) and abs(sorted(late)[len(late) // 2] - truth_bpm) < 8, late
                total_hr += 1
            # IBI: the beats the edge published in the session's span, at their own times.
            end = start + durations["BVP"]
            expected = [(t, v) for t, v in published_ibi if start <= t < end]
            assert [(round(t, 4), round(v, 4)) for t, v in export["IBI"]] == \
                [(round(t, 4), round(v, 4)) for t, v in expected]
            total_ibi += len(export["IBI"])
            for t in export["tags"]:
                assert min(abs(t - tt) for tt in tag_truth) < 0.05
            total_tags += len(export["tags"])
            info = (folder / "info.txt").read_text()
            assert "closed:" in info
        assert total_tags == len(tag_truth)
        assert total_ibi > 0
        if seconds >= 300:
            assert total_hr > 0, "no session long enough for the IBI engine's heart rate"
        assert total_filled > 0, "3 % packet loss filled no row: the loss did not reach the export?"
        assert not list((out / ".partial").iterdir())


def test_kill_9_mid_session_leaves_no_zip_that_looks_complete_and_a_restart_closes_it():
    with Rig(devices=1, seed=4, scenario=SCENARIO) as rig:
        out = rig.tmp / "sessions"
        args = ["record", "--host", "127.0.0.1", "--port", str(rig.port), "--out", str(out)]
        recorder, log = start_ctl(rig, *args, log_name="record-1.log")
        assert wait_until(lambda: "broker connected" in log.read_text(), 10), log.read_text()
        rig.start_agent(rig.config_text([1], batch_ms=250))
        assert rig.wait_connected(1)
        time.sleep(12)
        recorder.send_signal(signal.SIGKILL)
        recorder.wait(timeout=10)
        killed_at = time.time()
        # Zips already there are sessions that had ended (a clock jump can end one): each complete.
        before = sorted(out.glob("*.zip"))
        for zip_path in before:
            read_with_devicely(zip_path, rig.tmp)
        partial = list((out / ".partial").iterdir())
        assert len(partial) == 1, partial
        assert not [p for p in out.iterdir() if p.name.endswith(".zip") and p not in before]
        recorder, log = start_ctl(rig, *args, log_name="record-2.log")
        restarted_at = time.time()
        assert wait_until(lambda: len(list(out.glob("*.zip"))) > len(before), 10), log.read_text()
        time.sleep(15)
        assert stop(recorder) == 0, log.read_text()
        published = rig.subscriber.all()
        rig.stop_sim()
        published_by = {name: published_samples(published, TRUTH[name][0]) for name in TRUTH}
        truth_by = {name: truth_series(rig, *TRUTH[name]) for name in TRUTH}
        new = [z for z in sorted(out.glob("*.zip")) if z not in before]
        recovered = [z for z in new
                     if "recovered after an interrupted recording" in zipfile.ZipFile(z).read("info.txt").decode()]
        assert len(recovered) == 1, new
        for zip_path in new:
            export, folder = read_with_devicely(zip_path, rig.tmp)
            start = export["start"]["BVP"]
            filled = filled_rows((folder / "info.txt").read_text())
            for name in TRUTH:
                check_sampled(export, name, published_by[name], truth_by[name], start, filled[name],
                              received_from=None if zip_path in recovered else restarted_at + 1)
                if zip_path in recovered:
                    # It holds what was written before the kill: up to the last flush (1 s) before it.
                    assert start + len(export[name]) / RATES[name] > killed_at - 3, name
        assert not list((out / ".partial").iterdir())


def test_a_broker_restart_loses_no_sample_of_the_session():
    with Rig(devices=1, seed=6, scenario=SCENARIO) as rig:
        out = rig.tmp / "sessions"
        recorder, log = start_ctl(rig, "record", "--host", "127.0.0.1", "--port", str(rig.port), "--out", str(out),
                                  log_name="record.log")
        assert wait_until(lambda: "broker connected" in log.read_text(), 10), log.read_text()
        rig.start_agent(rig.config_text([1], batch_ms=250))
        assert rig.wait_connected(1)
        time.sleep(8)
        broker = next(p for p in rig.processes if "mosquitto" in " ".join(map(str, p.args)))
        outage_start = time.time()
        stop(broker)
        rig.processes.remove(broker)
        time.sleep(4)
        rig._spawn(["mosquitto", "-c", str(rig.tmp / "mosquitto.conf")], "mosquitto-2.log")
        assert wait_until(lambda: log.read_text().count("broker connected") >= 2, 20), log.read_text()
        outage_end = time.time()
        time.sleep(8)  # the agent replays its spool
        assert stop(recorder) == 0, log.read_text()
        assert "broker lost" in log.read_text()
        # The reference subscriber reconnects too; replayed messages that reach the recorder before it are not
        # in its record, so rows without a published sample are allowed here (complete=False).
        published = rig.subscriber.all()
        rig.stop_sim()
        published_by = {name: published_samples(published, TRUTH[name][0]) for name in TRUTH}
        truth_by = {name: truth_series(rig, *TRUTH[name]) for name in TRUTH}
        zips = sorted(out.glob("*.zip"))
        assert zips
        spans = []
        for zip_path in zips:
            export, folder = read_with_devicely(zip_path, rig.tmp)
            info = (folder / "info.txt").read_text()
            assert "closed: the wristband disconnected" not in info, info
            start = export["start"]["BVP"]
            filled = filled_rows(info)
            # Every sample the reference saw, replayed ones included, is in an export on its own row, as published.
            for name in TRUTH:
                check_sampled(export, name, published_by[name], truth_by[name], start, filled[name], complete=False)
            spans.append((start, start + len(export["BVP"]) / 64))
        # The exports cover the outage: the spool's replay filled it in. (A gap the edge itself had, e.g. messages
        # in flight when the broker died, may split the session there; the samples around it are all in.)
        assert any(a <= outage_start for a, _ in spans) and any(b >= outage_end + 2 for _, b in spans), spans
