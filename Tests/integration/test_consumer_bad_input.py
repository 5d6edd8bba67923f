"""Issue 16: bad input to the consumer tools, against real processes. Malformed payloads, out-of-order and duplicated
messages on the broker; a client sending 1 MB without a newline, 200 clients at once, a client that never reads —
each a counted drop or a clean close, never a trap, a hang or a slowdown of the other clients."""
import json
import re
import socket
import time

from agent_rig import SCENARIO, Rig, stop, wait_until
from consumer_rig import LineClient, start_ctl, start_e4_server

FAKE = "empalink/fake/ffff01"


def counters(log_text, program):
    line = [line for line in log_text.splitlines() if line.startswith(f"{program}: stopped:")][-1]
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", line)}


def data_lines(client, prefix, count, timeout=10):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        try:
            line = client.line(timeout=max(0.05, deadline - time.monotonic()))
        except socket.timeout:
            break
        if line is None:
            break
        if line.startswith(prefix):
            out.append(line)
    return out


def test_bad_input_is_dropped_and_counted_and_never_slows_the_others():
    with Rig(devices=1, seed=2, scenario=SCENARIO) as rig:
        rig.start_agent(rig.config_text([1], batch_ms=100))
        assert rig.wait_connected(1)
        server, port, log = start_e4_server(rig)
        recorder, record_log = start_ctl(rig, "record", "--host", "127.0.0.1", "--port", str(rig.port),
                                         "--out", str(rig.tmp / "sessions"), log_name="record.log")
        assert wait_until(lambda: "broker connected" in record_log.read_text(), 10)

        # A wristband of a board that does not exist, driven by hand.
        rig.subscriber.publish(f"{FAKE}/status", json.dumps({"status": "connected", "battery": 0.5}))
        bound = LineClient(port)
        assert wait_until(lambda: bound.command("device_connect FFFF01") == "R device_connect OK", 10)
        assert bound.command("device_subscribe gsr ON") == "R device_subscribe gsr OK"

        malformed = [b"not json", b"{}", b'{"sid":"abcdefgh","seq":0}', b'{"sid":"abcdefgh","seq":"0","t":1.8e9,'
                     b'"fs":4,"v":[1]}', b'{"sid":"abcdefgh","seq":0,"t":1.8e9,"fs":64,"v":[1]}',
                     b'{"sid":"abcdefgh","seq":0,"t":1.8e9,"fs":4,"v":[[1]]}', b"[" * 500 + b"]" * 500,
                     b'{"sid":"abcdefgh","seq":0,"t":1.8e9,"fs":4,"v":[1e999]}', b"\xff\xfe", b'"' + b"x" * 100000]
        for payload in malformed:
            rig.subscriber.publish(f"{FAKE}/gsr", payload)
        t0 = 1.8e9
        for seq, value in ((0, 0.1), (2, 0.3), (1, 0.2), (1, 0.2), (0, 0.1), (3, 0.4)):
            payload = {"sid": "testsid01", "seq": seq, "t": t0 + seq / 4, "fs": 4, "v": [value]}
            rig.subscriber.publish(f"{FAKE}/gsr", json.dumps(payload))
        got = data_lines(bound, "E4_Gsr", 4)
        assert [float(line.split()[2]) for line in got] == [0.1, 0.2, 0.3, 0.4], got
        assert [float(line.split()[1]) for line in got] == [t0, t0 + 0.25, t0 + 0.5, t0 + 0.75]
        assert not data_lines(bound, "E4_Gsr", 1, timeout=1), "a duplicate was delivered"

        # A normal client keeps streaming through everything below.
        steady = LineClient(port)
        assert steady.command("device_connect A00101") == "R device_connect OK"
        assert steady.command("device_subscribe bvp ON") == "R device_subscribe bvp OK"
        started = time.monotonic()

        # 1 MB without a newline: closed, counted.
        flood = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            flood.sendall(b"x" * 1_000_000)
        except OSError:
            pass
        flood.settimeout(5)
        try:
            assert flood.recv(100) == b""
        except ConnectionResetError:
            pass
        flood.close()

        # 200 clients at once, each answered.
        crowd = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(200)]
        for sock in crowd:
            sock.sendall(b"server_status\r\n")
        for sock in crowd:
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = sock.recv(100)
                assert chunk
                reply += chunk
            assert reply == b"R server_status OK\n"
        for sock in crowd:
            sock.close()

        # A client that never reads, asking for far more than it takes: dropped once 1 MiB is queued for it.
        sloth = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sloth.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sloth.connect(("127.0.0.1", port))
        sloth.settimeout(10)
        request = b"device_discover_list\n" * 20000
        closed = False
        try:
            for _ in range(10):
                sloth.sendall(request)
        except OSError:
            closed = True
        if not closed:
            time.sleep(1)
            try:
                sloth.sendall(request)
                sloth.sendall(request)
            except OSError:
                closed = True
        sloth.close()
        assert closed, "the server kept a client that never reads"

        elapsed = time.monotonic() - started
        bvp = data_lines(steady, "E4_Bvp", 10_000, timeout=1)
        rate = len(bvp) / (time.monotonic() - started)
        assert rate > 45, f"the steady client got {rate:.0f} BVP lines/s over {elapsed:.1f} s (64 expected)"
        assert bound.command("server_status", timeout=2) == "R server_status OK"
        steady.close()
        bound.close()

        assert stop(server) == 0, log.read_text()
        assert stop(recorder) == 0, record_log.read_text()
        served = counters(log.read_text(), "e4-server")
        assert served["closed_long_line"] == 1 and served["closed_slow"] >= 1, served
        assert served["accepted"] >= 203 and served["refused_over_limit"] == 0, served
        assert served["malformed"] == len(malformed) and served["duplicates"] == 2, served
        recorded = counters(record_log.read_text(), "record")
        assert recorded["malformed"] == len(malformed) and recorded["duplicates"] == 2, recorded
