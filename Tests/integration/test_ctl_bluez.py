"""empalinkctl scan / capture / decode and the example app, against empalink-sim on a private bus."""
import json
import os
import stat
import time

import pytest

from conftest import run
from simrig import simulated_bus


@pytest.fixture
def keyed(tmp_path, binaries):
    """An agent configuration whitelisting a00101 and a00103, with a key that unlocks a00101 and a00102."""
    keyring = tmp_path / "keyring.toml"
    created = run([str(binaries / "empalinkctl"), "key", "add", "--devices", "a00101,a00102", "--keyring",
                   str(keyring)])
    assert created.returncode == 0, created.stderr
    (tmp_path / "api-key").write_text(created.stdout)
    config = tmp_path / "agent.toml"
    config.write_text('[auth]\napi_key_file = "api-key"\nkeyring = "keyring.toml"\n'
                      '[[wristband]]\nserial = "a00101"\n[[wristband]]\naddress = "00:07:80:A0:01:03"\n')
    return config, created.stdout.strip(), keyring


def test_scan_lists_every_wristband_and_whether_it_would_connect(binaries, keyed):
    config, _, _ = keyed
    with simulated_bus(devices=3) as rig:
        result = run([str(binaries / "empalinkctl"), "scan", "--seconds", "2", "--config", str(config)],
                     env=rig.env, timeout=30)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["ADDRESS", "SERIAL", "NAME", "RSSI", "ALLOWED"]
    rows = {line.split()[1]: line for line in lines[1:]}
    assert set(rows) == {"a00101", "a00102", "a00103"}
    assert rows["a00101"].endswith("yes")
    assert rows["a00102"].endswith("no: not whitelisted")
    assert rows["a00103"].endswith("no: key does not unlock it")
    assert "00:07:80:A0:01:02" in rows["a00102"] and "Empatica E4" in rows["a00102"]


def test_scan_without_bluez_is_one_clear_error(binaries, tmp_path):
    with simulated_bus(devices=1) as rig:
        rig.sim.terminate()
        rig.sim.wait(timeout=10)
        result = run([str(binaries / "empalinkctl"), "scan", "--seconds", "8"],
                     env=rig.env, timeout=30)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == "scan: error: BlueZ is not running (no org.bluez on the system bus)"


def test_capture_then_decode_reproduces_the_samples(binaries, keyed, tmp_path):
    config, _, _ = keyed
    capture = tmp_path / "a00101.cap"
    capture.write_bytes(b"")
    os.chmod(capture, 0o644)  # an older capture, from before captures were 0600
    with simulated_bus(devices=1, seed=7) as rig:
        result = run([str(binaries / "empalinkctl"), "capture", "--address", "00:07:80:A0:01:01", "--out",
                      str(capture), "--seconds", "3", "--config", str(config)], env=rig.env, timeout=60)
        assert result.returncode == 0, result.stderr
        assert stat.S_IMODE(capture.stat().st_mode) == 0o600, "raw physiology is owner-only"
        rig.sim.terminate()
        rig.sim.wait(timeout=10)
        truth = [row for row in rig.truth_rows("a00101", "bvp.csv") if row["status"] == "0"]
        acc_truth = [row for row in rig.truth_rows("a00101", "acc.csv") if row["status"] == "0"]
    decoded = run([str(binaries / "empalinkctl"), "decode", "--capture", str(capture)])
    assert decoded.returncode == 0, decoded.stderr
    assert "0 decode errors" in decoded.stderr
    records = [json.loads(line) for line in decoded.stdout.splitlines()]
    bvp = [(r["t"] + i / r["fs"], v) for r in records if r["stream"] == "bvp" for i, v in enumerate(r["v"])]
    acc = [(r["t"] + i / r["fs"], xyz) for r in records if r["stream"] == "acc" for i, xyz in enumerate(r["v"])]
    assert len(bvp) >= 150, "3 s of BVP at 64 Hz"
    assert len(truth) >= len(bvp)
    # Timestamps come from arrival times (SPEC 8). The simulator sends on a 25 ms tick, like a BLE connection
    # interval, so a packet arrives 0-25 ms after its last sample; the clock's anchor converges to the earliest
    # arrival within about 1.5 s. From then on every sample is within one sample period of its true time.
    settled = bvp[0][0] + 1.5
    for (t, value), row in zip(bvp, truth):
        assert abs(value - float(row["value"])) < 1e-3
        tolerance = 1 / 64 if t >= settled else 1 / 64 + 0.025
        assert abs(t - float(row["t"])) <= tolerance, (t, row["t"])
    for (t, xyz), row in zip(acc, acc_truth):
        assert xyz == [int(row["x"]), int(row["y"]), int(row["z"])]
    # Garbage is one clear error line, not a trap.
    garbage = tmp_path / "garbage.cap"
    garbage.write_bytes(capture.read_bytes()[:30])
    broken = run([str(binaries / "empalinkctl"), "decode", "--capture", str(garbage)])
    assert broken.returncode == 2
    assert "error" in broken.stderr.splitlines()[-1]


def test_capture_refuses_a_wristband_the_key_does_not_unlock(binaries, keyed, tmp_path):
    config, _, _ = keyed
    with simulated_bus(devices=3) as rig:
        result = run([str(binaries / "empalinkctl"), "capture", "--address", "00:07:80:A0:01:03", "--out",
                      str(tmp_path / "x.cap"), "--seconds", "2", "--config", str(config)], env=rig.env, timeout=60)
    assert result.returncode == 1
    assert "not allowed by the API key" in result.stderr


def test_capture_of_an_absent_wristband_gives_up_with_a_message(binaries, keyed, tmp_path):
    config, _, _ = keyed
    with simulated_bus(devices=1) as rig:
        start = time.monotonic()
        result = run([str(binaries / "empalinkctl"), "capture", "--address", "00:07:80:A0:01:09", "--out",
                      str(tmp_path / "x.cap"), "--wait", "2", "--config", str(config)], env=rig.env, timeout=30)
        elapsed = time.monotonic() - start
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        "capture: error: 00:07:80:A0:01:09 was not seen within 2 s"), result.stderr
    assert elapsed < 10
    assert not (tmp_path / "x.cap").exists()


def test_example_app_streams_through_the_public_api(binaries, keyed):
    _, key, keyring = keyed
    with simulated_bus(devices=1) as rig:
        result = run([str(binaries / "empalink-example"), key, str(keyring), "4"], env=rig.env, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "a00101: connected" in result.stdout
    assert "received" in result.stdout and not result.stdout.strip().endswith("received 0 BVP samples")
