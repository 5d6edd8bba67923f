"""Issue 16, SPEC §17.3: `empalinkctl watch`. `--once` against `make demo` (scripts/demo.sh, which itself shows the
live view by default) lists every whitelisted wristband with its heart rate and battery; the live view, run in tmux
as a person would run it over SSH, is read back with `capture-pane`."""
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from agent_rig import SCENARIO, Rig, port_busy, wait_until
from conftest import ROOT, bin_dir
from test_agent_demo import DEMO_PORT, session_members

def parse_rows(text):
    rows = {}
    for line in text.splitlines():
        fields = re.split(r"\s{2,}", line.strip())
        if fields and re.fullmatch(r"A001\d\d", fields[0]):
            rows[fields[0]] = fields
    return rows


def test_watch_once_against_the_demo_shows_every_whitelisted_wristband_with_hr_and_battery():
    if port_busy(DEMO_PORT):
        pytest.skip(f"port {DEMO_PORT} (the demo's broker) is in use by something else")
    lines = []
    demo = subprocess.Popen(["bash", str(ROOT / "scripts" / "demo.sh"), str(bin_dir())], cwd=ROOT,
                            env=dict(os.environ, DEMO_SECONDS="70"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    reader = threading.Thread(target=lambda: lines.extend(demo.stdout), daemon=True)
    reader.start()
    try:
        assert wait_until(lambda: port_busy(DEMO_PORT), 20)
        # The edge's IBI engine needs about 20 s of pulse before the first heart rate.
        result = subprocess.run([str(bin_dir() / "empalinkctl"), "watch", "--once", "--host", "127.0.0.1",
                                 "--port", str(DEMO_PORT), "--wait", "50"], capture_output=True, text=True, timeout=70)
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(timeout=20)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait(timeout=10)
        for pid in session_members(demo.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reader.join(timeout=5)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout, "--once prints plain text"
    header = result.stdout.splitlines()[0].split()
    assert header == ["DEVICE", "BOARD", "STATUS", "RSSI", "BATT", "HR", "IBI", "EDA", "TEMP", "LOSS", "SPOOL", "SEEN"]
    rows = parse_rows(result.stdout)
    for device in ("A00101", "A00102"):  # Config/demo.toml's whitelist
        fields = rows[device]
        assert fields[1] == "demo" and fields[2] == "connected", fields
        assert re.fullmatch(r"\d+%", fields[4]), fields  # battery
        # Heart rate, bpm: bare from beats, else with its source (`85.3(spectral)`, issue #18).
        bpm, source = re.fullmatch(r"([0-9.]+)(?:\((spectral|device)\))?", fields[5]).groups()
        assert 40 <= float(bpm) <= 200, fields
    assert rows["A00103"][2] == "not allowed"
    shown = "".join(lines)
    assert "A00101" in shown and "\x1b[H" in shown, "make demo did not show the live view"


def test_live_view_in_tmux():
    with Rig(devices=2, seed=9, scenario=SCENARIO) as rig:
        rig.start_agent(rig.config_text([1, 2], batch_ms=250))
        assert rig.wait_connected(1) and rig.wait_connected(2)
        name = f"empalink-watch-{os.getpid()}"
        command = f"{rig.bin / 'empalinkctl'} watch --host 127.0.0.1 --port {rig.port} --device a00102"
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "20", command], check=True,
                       timeout=10)
        try:
            def screen():
                return subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True,
                                      timeout=5).stdout
            def traced():
                text = screen()
                if "BVP A00102" not in text or "A00101" not in text:
                    return None
                return text if len(text.split("BVP A00102", 1)[1].splitlines()[1]) >= 64 else None
            first = wait_until(traced, 15)
            assert first, screen()
            rows = parse_rows(first)
            assert rows["A00101"][2] == "connected" and rows["A00102"][2] == "connected", first
            assert "broker connected" in first
            trace = first.split("BVP A00102", 1)[1].splitlines()[1]
            assert len(trace) == 64 and set(trace) <= set("▁▂▃▄▅▆▇█"), trace
            # Refreshed in place: the screen changes, the layout stays.
            time.sleep(1.5)
            second = screen()
            assert second != first and second.splitlines()[0] == first.splitlines()[0]
            subprocess.run(["tmux", "send-keys", "-t", name, "C-c"], timeout=5)
            assert wait_until(lambda: subprocess.run(["tmux", "has-session", "-t", name], capture_output=True,
                                                     timeout=5).returncode != 0, 10), "watch did not quit on Ctrl-C"
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=5)
