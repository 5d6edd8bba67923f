"""Issue 19 acceptance, end to end (SPEC §16): a simulated ward of two E4s and two Heart Rate Service straps on a
private dbus-daemon, mosquitto on a free loopback port and the real empalinkd. The API key names only the E4s: the
straps need no key grant, the whitelist is enough.

For the straps the published IBIs are the simulator's RR truth (to 1/1024 s) and the published HR the device's
values; strap 3 loses skin contact now and then and its `contact` stream shows every change; strap 4 (published under
the id `strap-four`) has its notifications dropped over the air for a few seconds, which the agent counts as lost
beats and never bridges with an invented interval. The consumers of SPEC §17 run beside the agent: `record` writes
the straps' IBIs in the E4 layout, `e4-server` lists only the E4s (unless --all-devices), `watch` shows the straps.
"""
import csv
import io
import subprocess
import time
import zipfile

import pytest

from agent_rig import SCENARIO, Rig, hrs_serial, serial, wait_until
from consumer_rig import LineClient, start_ctl, start_e4_server

E4S = (1, 2)
CONTACT_STRAP = 3
LOSSY_STRAP = 4
LOSSY_ID = "strap-four"
# Strap 3 loses contact every few seconds (3-12 s episodes); strap 4 never does, so its gaps are only the drops.
WARD = SCENARIO + f"""
[[device]]
index = {CONTACT_STRAP}
contact_loss_per_hour = 900

[[device]]
index = {LOSSY_STRAP}
contact_loss_per_hour = 0
"""


@pytest.fixture(scope="module")
def ward():
    record = {}
    with Rig(devices=len(E4S), hrs=2, scenario=WARD) as rig:
        # A key for the two E4s only.
        key = rig.ctl("key", "add", "--devices", ",".join(serial(k) for k in E4S), "--keyring", str(rig.keyring))
        assert key.returncode == 0, key.stderr
        rig.key_file.write_text(key.stdout.strip().splitlines()[0] + "\n")
        record_dir = rig.tmp / "sessions"
        start_ctl(rig, "record", "--host", "127.0.0.1", "--port", str(rig.port), "--out", str(record_dir),
                  log_name="record.log")
        _, e4_port, _ = start_e4_server(rig)
        _, all_port, _ = start_e4_server(rig, "--all-devices")
        rig.start_agent(rig.config_text(list(E4S), straps=[CONTACT_STRAP, (LOSSY_STRAP, LOSSY_ID)]))
        strap_topics = {CONTACT_STRAP: hrs_serial(CONTACT_STRAP), LOSSY_STRAP: LOSSY_ID}
        record["topics"] = strap_topics

        def status(topic_id):
            messages = rig.subscriber.all(rig.topic(topic_id, "status"))
            return messages[-1].json if messages else {}
        record["connected"] = {
            name: bool(wait_until(lambda name=name: status(name).get("status") == "connected", 25))
            for name in [serial(k) for k in E4S] + list(strap_topics.values())}
        # Some clean streaming, then four seconds in which every notification of strap 4 is lost over the air.
        time.sleep(6)
        drop = rig.sim_call("SetPacketLoss", f"string:{hrs_serial(LOSSY_STRAP)}", "double:1")
        assert drop.returncode == 0, drop.stderr
        time.sleep(4)
        rig.sim_call("SetPacketLoss", f"string:{hrs_serial(LOSSY_STRAP)}", "double:0")

        def contact_values():
            return [pair[1] for m in rig.subscriber.all(rig.topic(hrs_serial(CONTACT_STRAP), "contact"))
                    for pair in m.json["v"]]
        # Contact lost and regained at least once; the E4s' IBI engine needs about 20 s of BVP.
        record["contact_seen"] = bool(wait_until(lambda: contact_values().count(1) >= 2 and 0 in contact_values(),
                                                 60, interval=0.25))
        record["e4_hr"] = bool(wait_until(
            lambda: all(rig.subscriber.all(rig.topic(serial(k), "hr")) for k in E4S), 40, interval=0.25))
        with LineClient(e4_port) as client:
            record["e4_list"] = client.command("device_list")
        with LineClient(all_port) as client:
            record["all_list"] = client.command("device_list")
        record["watch"] = subprocess.run([str(rig.bin / "empalinkctl"), "watch", "--host", "127.0.0.1", "--port",
                                          str(rig.port), "--once", "--wait", "10"],
                                         capture_output=True, text=True, timeout=30).stdout
        metrics = [m.json for m in rig.subscriber.all(rig.topic("metrics")) if m.json]
        record["metrics"] = metrics[-1] if metrics else {}
        record["status"] = {name: status(name) for name in strap_topics.values()}
        record["exit"] = rig.agent.send_signal(15) or rig.agent.wait(timeout=10)
        time.sleep(0.3)
        record["messages"] = rig.subscriber.all()
        # Sessions close once their wristband is disconnected (and 5 s of linger).
        record["zips"] = wait_until(lambda: sorted(record_dir.glob(f"*_{hrs_serial(CONTACT_STRAP).upper()}.zip")), 20)
        record["zip_ibi"] = {}
        for path in record["zips"] or []:
            with zipfile.ZipFile(path) as archive:
                record["zip_ibi"][path.name] = archive.read("IBI.csv").decode()
                record["zip_names"] = sorted(archive.namelist())
        rig.stop_sim()
        record["truth"] = {k: {name: rig.read_truth(k, name, hrs_serial(k)) for name in ("rr", "hrs")}
                           for k in (CONTACT_STRAP, LOSSY_STRAP)}
        record["log"] = rig.agent_log_text()
    return record


def stream(ward, topic_id, name):
    """Every [t, value] of a device's event stream, in (sid, seq) order."""
    topic = f"empalink/e2e/{topic_id}/{name}"
    messages = sorted((m.json for m in ward["messages"] if m.topic == topic and m.json),
                      key=lambda j: (j["sid"], j["seq"]))
    return [pair for j in messages for pair in j["v"]]


def contiguous_in(published, truth):
    """Where `published` occurs in `truth` as one contiguous run (index), else None."""
    for start in range(len(truth) - len(published) + 1):
        if truth[start:start + len(published)] == published:
            return start
    return None


def test_the_ward_connects_without_a_key_grant_for_the_straps(ward):
    assert all(ward["connected"].values()), (ward["connected"], ward["log"][-3000:])
    assert ward["e4_hr"], "the E4s published no heart rate"
    topics = {m.topic for m in ward["messages"]}
    for name in ward["topics"].values():
        assert {f"empalink/e2e/{name}/{s}" for s in ("hr", "ibi", "battery")} <= topics
        # A strap has no PPG, accelerometer, EDA or temperature.
        assert not {f"empalink/e2e/{name}/{s}" for s in ("bvp", "acc", "gsr", "temp")} & topics
    # The id replaces the serial in every topic of strap 4.
    assert not any(f"/{hrs_serial(LOSSY_STRAP)}/" in t for t in topics)


def test_strap_ibis_are_the_simulators_rr_intervals(ward):
    for k, name in ward["topics"].items():
        published = stream(ward, name, "ibi")
        delivered = [row for row in ward["truth"][k]["rr"] if row["status"] == "0"]
        assert len(published) >= 10, (k, len(published))
        ticks = [round(v * 1024) for _, v in published]
        # Exact to 1/1024 s (published with 4 decimals: within half a tick of the truth).
        assert all(abs(v * 1024 - round(v * 1024)) < 0.1 for _, v in published)
        start = contiguous_in(ticks, [int(row["rr_1024"]) for row in delivered])
        assert start is not None, (k, ticks[:12], [row["rr_1024"] for row in delivered][:40])
        # Stamped at the beat that ends the interval: after it, by less than the strap's one-second rhythm.
        for (t, _), row in zip(published, delivered[start:]):
            assert -0.05 <= t - float(row["t"]) <= 1.1, (k, t, row)


def test_strap_hr_is_the_devices_value(ward):
    for k, name in ward["topics"].items():
        published = [v for _, v in stream(ward, name, "hr")]
        sent = [float(row["hr"]) for row in ward["truth"][k]["hrs"] if row["status"] == "0" and row["hr"] != "0"]
        assert len(published) >= 10
        assert contiguous_in(published, sent) is not None, (k, published[:10], sent[:20])


def test_contact_loss_shows(ward):
    assert ward["contact_seen"], stream(ward, ward["topics"][CONTACT_STRAP], "contact")
    published = stream(ward, ward["topics"][CONTACT_STRAP], "contact")
    values = [v for _, v in published]
    # Changes only, as the device reported them.
    assert all(a != b for a, b in zip(values, values[1:])), values
    rows = [row for row in ward["truth"][CONTACT_STRAP]["hrs"] if row["status"] == "0"]
    changes = [(float(row["t"]), int(row["contact"])) for i, row in enumerate(rows)
               if i == 0 or row["contact"] != rows[i - 1]["contact"]]
    start = contiguous_in(values, [c for _, c in changes])
    assert start is not None, (values, changes)
    for (t, _), (truth_t, _) in zip(published, changes[start:]):
        assert abs(t - truth_t) < 0.25


def test_a_dropped_notification_is_counted_as_lost_beats(ward):
    lost_truth = sum(1 for row in ward["truth"][LOSSY_STRAP]["rr"] if row["status"] == "1")
    dropped = sum(1 for row in ward["truth"][LOSSY_STRAP]["hrs"] if row["status"] == "1")
    assert dropped >= 3 and lost_truth >= 3
    lost = ward["metrics"]["devices"][LOSSY_ID]["lost"]
    # Counted from the time the RR chain does not cover: about the beats that were lost, never nothing.
    assert lost_truth - 2 <= lost <= lost_truth + 1, (lost, lost_truth)
    assert ward["metrics"]["devices"][ward["topics"][CONTACT_STRAP]]["lost"] == 0


def test_strap_status_shows_profile_battery_and_device_information(ward):
    for k, name in ward["topics"].items():
        status = ward["status"][name]
        assert status["profile"] == "hrs"
        assert status["manufacturer"] == "EmpaLink Simulator"
        assert status["model"] == "HRM-Sim 1"
        assert status["serial_number"] == hrs_serial(k).upper()
        assert status["firmware"] == "1.0.0"
        assert status["body_sensor_location"] == "chest"
        assert 0 < status["battery"] <= 1
    devices = [m.json for m in ward["messages"] if m.topic == "empalink/e2e/devices" and m.json][-1]
    assert devices[LOSSY_ID]["profile"] == "hrs" and devices[LOSSY_ID]["manufacturer"] == "EmpaLink Simulator"
    assert devices[serial(1)]["profile"] == "e4"


def test_record_writes_a_straps_ibis_in_the_e4_layout(ward):
    assert ward["zips"], "no session export for the strap"
    published = stream(ward, ward["topics"][CONTACT_STRAP], "ibi")
    rows = []
    for name, text in sorted(ward["zip_ibi"].items()):
        lines = text.splitlines()
        start = float(lines[0].split(",")[0])
        assert lines[0].endswith(", IBI") and float(name.split("_")[0]) == start
        rows += [(start + float(t), float(v)) for t, v in csv.reader(io.StringIO("\n".join(lines[1:])))]
    # Every published beat of the session, unchanged (the recorder's own clock may miss one at either end).
    assert rows and len(rows) >= len(published) - 2, (len(rows), len(published))
    for t, v in rows:
        assert any(abs(t - pt) < 1e-5 and abs(v - pv) < 1e-5 for pt, pv in published), (t, v)
    assert {"IBI.csv", "HR.csv", "BVP.csv", "info.txt"} <= set(ward["zip_names"])


def test_e4_server_lists_only_the_e4s_unless_asked(ward):
    assert ward["e4_list"] == "R device_list 2 | A00101 Empatica_E4 | A00102 Empatica_E4", ward["e4_list"]
    assert "B00103" in ward["all_list"] and "A00101" in ward["all_list"], ward["all_list"]


def test_watch_shows_the_straps(ward):
    rows = {line.split()[0]: line for line in ward["watch"].splitlines() if line.strip()}
    row = rows.get(hrs_serial(CONTACT_STRAP).upper())
    assert row is not None and "connected" in row, ward["watch"]
