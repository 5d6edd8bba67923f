"""Issue 16, SPEC §17.2: `empalinkctl e4-server` against real processes (bus, simulator, mosquitto, empalinkd).

A real, independent client of Empatica's protocol — the PyPI package open-e4-client — lists the wristbands,
connects, subscribes to every stream, pauses and resumes, unsubscribes and disconnects; what it receives equals the
simulator's truth (ACC exact, BVP/EDA/TEMP to the precision the edge published) and the edge's IBI/HR as published.
A plain socket drives the other commands and the error replies.
"""
import threading
import time

from e4client.client import E4StreamingClient
from e4client.protocol import E4DataStreamID

from agent_rig import SCENARIO, Rig, serial, stop, wait_until
from consumer_rig import LineClient, nearest, start_e4_server, truth_series

# Decimals the agent publishes per stream (Docs/mqtt.md): the precision a value can be compared to the truth with.
PUBLISHED_DECIMALS = {"bvp": 3, "gsr": 4, "temp": 2}


def test_open_e4_client_lists_connects_subscribes_pauses_and_gets_the_truth():
    # The battery drains fast enough to be notified during the test, besides the reading sent at subscribe.
    with Rig(devices=2, seed=11, scenario=SCENARIO + "[physiology]\nbattery_drain_per_hour = 1800\n") as rig:
        rig.start_agent(rig.config_text([1, 2], batch_ms=100))
        assert rig.wait_connected(1) and rig.wait_connected(2), rig.agent_log_text()
        server, port, log = start_e4_server(rig)
        with LineClient(port) as probe:
            assert wait_until(lambda: probe.command("device_list").startswith("R device_list 2 "), 10)

        client = E4StreamingClient("127.0.0.1", port)
        try:
            found = {d.uid: d.allowed for d in client.BTLE_discover_devices()}
            assert found == {"A00101": True, "A00102": True}
            assert {d.uid for d in client.list_connected_devices()} == {"A00101", "A00102"}
            client.BTLE_connect_device("A00101")
            connection = client.connect_to_device("A00101")
            samples = {stream: [] for stream in E4DataStreamID}
            lock = threading.Lock()

            def collect(stream, timestamp, *values):
                with lock:
                    samples[stream].append((time.monotonic(), timestamp, *values))
            for stream in E4DataStreamID:
                connection.subscribe_to_stream(stream, collect)
            for _ in range(3):
                rig.sim_call("PressTag", "string:" + serial(1))
                time.sleep(0.3)

            def count(stream):
                with lock:
                    return len(samples[stream])
            # The edge emits IBIs about 20 s after connecting.
            assert wait_until(lambda: count(E4DataStreamID.IBI) >= 3 and count(E4DataStreamID.TAG) >= 3, 60), \
                {s.name: count(s) for s in E4DataStreamID}

            # E4DeviceConnection.toggle_pause never records its state (it always pauses): the client's own calls.
            client.pause()
            time.sleep(0.5)  # lines already in flight before the reply
            paused_at = count(E4DataStreamID.BVP)
            time.sleep(1.5)
            assert count(E4DataStreamID.BVP) == paused_at, "data flowed while paused"
            client.resume()
            assert wait_until(lambda: count(E4DataStreamID.BVP) > paused_at + 32, 5), "no data after resume"

            for stream in E4DataStreamID:
                if stream != E4DataStreamID.HR:  # HR shares `ibi`: unsubscribing IBI ends both
                    connection.unsubscribe_from_stream(stream)
            time.sleep(0.5)
            stopped_at = {s: count(s) for s in E4DataStreamID}
            time.sleep(1.0)
            assert {s: count(s) for s in E4DataStreamID} == stopped_at, "data after unsubscribing"
            client.disconnect_from_device()
        finally:
            client.close()

        published = rig.subscriber.all()
        assert stop(server) == 0, log.read_text()
        rig.stop_sim()

        with lock:
            got = {stream: list(values) for stream, values in samples.items()}
        for stream in E4DataStreamID:
            assert got[stream], f"no {stream.name} samples"

        # ACC: exact integers, each at the time of its truth sample (within half a sample period).
        acc_truth = truth_series(rig, 1, "acc", ["x", "y", "z"])
        for _, t, x, y, z in got[E4DataStreamID.ACC]:
            row = nearest(acc_truth, t)
            assert abs(row[0] - t) < 0.5 / 32 and (x, y, z) == row[1:], (t, x, y, z, row)
        for stream, name, column, key in ((E4DataStreamID.BVP, "bvp", "value", "bvp"),
                                          (E4DataStreamID.GSR, "gsr", "microsiemens", "gsr"),
                                          (E4DataStreamID.TEMP, "temp", "celsius", "temp")):
            truth = truth_series(rig, 1, name, [column])
            fs = {"bvp": 64, "gsr": 4, "temp": 4}[key]
            tolerance = 0.5 * 10 ** -PUBLISHED_DECIMALS[key] + 1e-9
            for _, t, value in got[stream]:
                row = nearest(truth, t)
                assert abs(row[0] - t) < 0.5 / fs, (stream, t, row)
                assert abs(value - row[1]) <= tolerance, (stream, t, value, row)

        # IBI as the edge published it; HR = 60 / IBI at the same time, as Empatica's server sent it.
        ibis = [tuple(pair) for m in published if m.topic.endswith(f"/{serial(1)}/ibi") for pair in m.json["v"]]
        for _, t, ibi in got[E4DataStreamID.IBI]:
            assert any(abs(t - pt) <= 0.51e-5 and abs(ibi - pv) < 1e-9 for pt, pv in ibis), (t, ibi)
        hr_by_time = {t: bpm for _, t, bpm in got[E4DataStreamID.HR]}
        for _, t, ibi in got[E4DataStreamID.IBI]:
            assert abs(hr_by_time[t] - 60 / ibi) < 1e-3
        batteries = [tuple(p) for m in published if m.topic.endswith(f"/{serial(1)}/battery") for p in m.json["v"]]
        assert len(got[E4DataStreamID.BAT]) >= 2
        for _, t, level in got[E4DataStreamID.BAT]:
            # Times are printed with 5 decimals: equal to the published time within half the last digit.
            assert any(abs(t - pt) <= 0.51e-5 and level == pv for pt, pv in batteries), (t, level, batteries)
        tag_truth = [float(r["t"]) for r in rig.read_truth(1, "tags")]
        for _, t in got[E4DataStreamID.TAG]:
            assert min(abs(t - tt) for tt in tag_truth) < 0.1, (t, tag_truth)


def test_plain_socket_commands_errors_system_lines_and_decimal_comma():
    with Rig(devices=3, seed=5, scenario=SCENARIO) as rig:
        rig.start_agent(rig.config_text([1, 2], batch_ms=100))
        assert rig.wait_connected(1) and rig.wait_connected(2)
        server, port, log = start_e4_server(rig)
        comma, comma_port, comma_log = start_e4_server(rig, "--decimal-comma", "--no-system-messages")
        with LineClient(port) as c:
            assert wait_until(lambda: c.command("device_list") == "R device_list 2 | A00101 Empatica_E4 | "
                              "A00102 Empatica_E4", 10)
            assert c.command("server_status") == "R server_status OK"
            discovered = c.command("device_discover_list")
            assert discovered.startswith("R device_discover_list 3 | ")
            assert "A00103 Empatica_E4 not_allowed" in discovered and "A00101 Empatica_E4 allowed" in discovered
            assert c.command("device_subscribe gsr ON") == "R device_subscribe gsr ERR You are not connected to any device"
            assert c.command("device_disconnect") == "R device_disconnect ERR No connected device."
            assert c.command("device_connect A00103") == "R device_connect ERR the requested device is not available"
            assert c.command("device_connect_btle 123456 100").startswith("R device_connect_btle ERR ")
            assert c.command("device_connect_btle a00101 100") == "R device_connect_btle OK"
            assert c.command("make_coffee now") == "R make_coffee ERR Unknown command"
            assert c.command("  device_connect   a00102 \r") == "R device_connect OK"
            assert c.command("device_subscribe foo ON") == ("R device_subscribe foo ERR Selected stream is not valid! "
                                                            "Available streams: [acc,bat,bvp,gsr,ibi,tag,tmp]")
            assert c.command("pause ON") == "R pause ON"
            assert c.command("device_subscribe gsr ON") == "R device_subscribe gsr OK"
            assert c.command("device_subscribe gsr ON") == "R device_subscribe gsr OK"
            assert c.command("pause OFF") == "R pause OFF"
            raw = c.sock
            raw.settimeout(5)
            data = c.line()
            while data is not None and data.startswith("R "):
                data = c.line()
            assert data.startswith("E4_Gsr "), data
            fields = data.split(" ")
            assert len(fields) == 3 and float(fields[1]) > 1.7e9 and len(fields[1].split(".")[-1]) <= 5

            # A wristband that drops: the bound connection is told, and told again when the edge reconnects.
            assert rig.sim_call("Disconnect", "string:" + serial(2)).returncode == 0
            lines = []
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and "R connection re-established to device A00102" not in lines:
                line = c.line(timeout=max(0.1, deadline - time.monotonic()))
                if line is None:
                    break
                if line.startswith("R "):
                    lines.append(line)
            assert "R connection lost to device A00102" in lines
            assert "R connection re-established to device A00102" in lines

            assert c.command("device_disconnect") == "R device_disconnect OK"
            rest = c.sock.recv(65536)
            while rest:
                rest = c.sock.recv(65536)  # data lines already queued, then EOF: a graceful close
        with LineClient(comma_port) as c:
            assert wait_until(lambda: c.command("device_connect A00101") == "R device_connect OK", 10)
            assert c.command("device_subscribe tmp ON") == "R device_subscribe tmp OK"
            line = c.line()
            while line.startswith("R "):
                line = c.line()
            assert line.startswith("E4_Temperature ") and "," in line and "." not in line, line
        assert stop(server) == 0 and stop(comma) == 0
        assert "stopped:" in log.read_text()
