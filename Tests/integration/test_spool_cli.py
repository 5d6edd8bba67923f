"""`empalinkctl spool inspect|verify`: a spool written here in Python from the documented format (Docs/spool.md),
so the tool and the format description are checked against each other; damage makes verify exit 1 with one line."""
import hashlib
import struct
import zlib

import pytest

from conftest import run

RECORD_MAGIC = b"ESR1"
CURSOR_MAGIC = b"ESC2"


def frame(sequence, timestamp_us, key, topic, message, qos=1, retain=False):
    body = struct.pack("<QqHHBBH", sequence, timestamp_us, len(key), len(topic), qos, 1 if retain else 0, 0)
    body += key + topic + message
    length = struct.pack("<I", len(body))
    return RECORD_MAGIC + length + struct.pack("<I", zlib.crc32(length + body)) + body


def cursor(acknowledged_below, next_sequence, listed=()):
    data = CURSOR_MAGIC + struct.pack("<QQI", acknowledged_below, next_sequence, len(listed))
    data += b"".join(struct.pack("<Q", s) for s in listed)
    return data + struct.pack("<I", zlib.crc32(data))


T0 = 1_764_400_000_000_000  # 2025-11-29T07:06:40Z


def write_spool(directory, records_per_segment=(10, 10, 5), acknowledged_below=4, listed=(6,)):
    directory.mkdir(exist_ok=True)
    sequence = 0
    for number, count in enumerate(records_per_segment, start=1):
        data = b""
        for _ in range(count):
            device = f"dev{sequence % 2}"
            data += frame(sequence, T0 + sequence * 250_000, f"{device}/bvp".encode(),
                          f"empalink/a/{device}/bvp".encode(), b'{"seq":%d,"v":[1,2,3]}' % sequence)
            sequence += 1
        (directory / f"{number:020d}.seg").write_bytes(data)
    (directory / "cursor").write_bytes(cursor(acknowledged_below, sequence, listed))
    return sequence


def spool(binaries, *args):
    return run([str(binaries / "empalinkctl"), "spool", *args])


def digest(directory):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def test_inspect_reports_counts_sizes_oldest_newest_and_streams(binaries, tmp_path):
    directory = tmp_path / "spool"
    total = write_spool(directory)
    result = spool(binaries, "inspect", "--dir", str(directory))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    size = sum(p.stat().st_size for p in directory.glob("*.seg"))
    assert "segments: 3 (1…3)" in out
    assert f"bytes: {size}" in out
    # Acknowledged: 0..3 (below 4) and 6.
    assert f"records: {total} ({total - 5} pending, 5 acknowledged)" in out
    assert "oldest: 2025-11-29T07:06:40.000000Z (seq 0)" in out
    assert "newest: 2025-11-29T07:06:46.000000Z (seq 24)" in out
    assert "stream dev0/bvp: 13 records" in out and "stream dev1/bvp: 12 records" in out
    assert "cursor: valid (acknowledged below 4, 1 more listed, next sequence 25)" in out
    assert "spool: ok:" in out


def test_verify_passes_an_intact_spool_and_an_empty_directory(binaries, tmp_path):
    directory = tmp_path / "spool"
    write_spool(directory)
    result = spool(binaries, "verify", "--dir", str(directory))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"spool: ok: 3 segments, 25 records, " \
        f"{sum(p.stat().st_size for p in directory.glob('*.seg'))} bytes, every CRC valid"
    empty = tmp_path / "empty"
    empty.mkdir()
    result = spool(binaries, "verify", f"--dir={empty}")
    assert result.returncode == 0 and "0 segments, 0 records" in result.stdout


@pytest.mark.parametrize("damage", ["flip", "truncate", "cursor", "delete_last", "garbage_between"])
def test_verify_exits_1_with_one_line_on_damage_and_changes_nothing(binaries, tmp_path, damage):
    directory = tmp_path / "spool"
    write_spool(directory)
    second = directory / f"{2:020d}.seg"
    if damage == "flip":
        data = bytearray(second.read_bytes())
        data[len(data) // 2] ^= 0x40
        second.write_bytes(bytes(data))
    elif damage == "truncate":
        second.write_bytes(second.read_bytes()[:-7])
    elif damage == "cursor":
        data = bytearray((directory / "cursor").read_bytes())
        data[5] ^= 1
        (directory / "cursor").write_bytes(bytes(data))
    elif damage == "delete_last":
        (directory / f"{3:020d}.seg").unlink()
    elif damage == "garbage_between":
        data = second.read_bytes()
        second.write_bytes(data[:60] + b"\x00garbage\xff" * 3 + data[60:])
    before = digest(directory)
    result = spool(binaries, "verify", "--dir", str(directory))
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spool: DAMAGED: "), lines
    expected = {"flip": "bytes lost", "truncate": "bytes lost", "cursor": "cursor corrupt",
                "delete_last": "records missing", "garbage_between": "bytes lost"}[damage]
    assert expected in lines[0]
    assert digest(directory) == before, "verify must not modify the spool"
    # inspect still works on a damaged spool and names the damage.
    inspected = spool(binaries, "inspect", "--dir", str(directory))
    assert inspected.returncode == 0 and "DAMAGED" in inspected.stdout


def test_usage_and_unreadable_directory_errors(binaries, tmp_path):
    assert spool(binaries).returncode == 2
    assert spool(binaries, "check", "--dir", str(tmp_path)).returncode == 2
    assert spool(binaries, "inspect", "--dir").returncode == 2
    result = spool(binaries, "verify", "--dir", str(tmp_path / "absent"))
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "No such file or directory" in result.stderr
    assert "usage: empalinkctl spool" in spool(binaries, "--help").stdout
