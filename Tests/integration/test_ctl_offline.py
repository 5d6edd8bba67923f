"""Issue 23, item 12 (the tools without the agent): `key list` and `key revoke`, `key add --expires` in the past
refused, and `spool verify` of a directory that is no spool refused.
"""
import os
import stat

from conftest import run


def test_key_list_shows_entries_and_revoke_removes_one(binaries, tmp_path):
    keyring = tmp_path / "keyring.toml"
    ctl = str(binaries / "empalinkctl")
    first = run([ctl, "key", "add", "--devices", "a00101,a00102", "--keyring", str(keyring)])
    second = run([ctl, "key", "add", "--devices", "*", "--expires", "2099-12-31", "--keyring", str(keyring)])
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    os.chmod(keyring, 0o640)
    listed = run([ctl, "key", "list", "--keyring", str(keyring)])
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].split()[1:] == ["a00101,a00102", "never", "expires"]
    assert lines[1].split()[1:] == ["*", "expires", "2099-12-31"]
    assert first.stdout.strip() not in listed.stdout, "list must never show a key"

    revoked = run([ctl, "key", "revoke", "--sha256", lines[0].split()[0], "--keyring", str(keyring)])
    assert revoked.returncode == 0, revoked.stderr
    assert stat.S_IMODE(keyring.stat().st_mode) == 0o640, "revoke keeps the keyring's mode"
    after = run([ctl, "key", "list", "--keyring", str(keyring)]).stdout.splitlines()
    assert after == lines[1:]
    # A prefix that matches nothing is one clear line.
    missing = run([ctl, "key", "revoke", "--sha256", "00000000", "--keyring", str(keyring)])
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"key: error: no entry in {keyring} has a hash starting 00000000"


def test_key_add_refuses_an_expiry_in_the_past(binaries, tmp_path):
    keyring = tmp_path / "keyring.toml"
    result = run([str(binaries / "empalinkctl"), "key", "add", "--devices", "*", "--expires", "2020-01-01",
                  "--keyring", str(keyring)])
    assert result.returncode == 2
    assert result.stderr.splitlines()[0].startswith("key: --expires: 2020-01-01 is in the past (today is ")
    assert result.stdout == "" and not keyring.exists()


def test_spool_verify_refuses_a_directory_that_is_no_spool(binaries, tmp_path):
    (tmp_path / "hosts").write_text("127.0.0.1 localhost\n")
    (tmp_path / "ssh").mkdir()
    for action in ("verify", "inspect"):
        result = run([str(binaries / "empalinkctl"), "spool", action, "--dir", str(tmp_path)])
        assert result.returncode == 1, result.stdout
        assert result.stderr.strip() == (f"spool: {tmp_path}: error: not a spool directory (no segments, no cursor, "
                                         "2 other entries); check --dir")
    # An empty directory is a spool before its first record.
    empty = tmp_path / "ssh"
    result = run([str(binaries / "empalinkctl"), "spool", "verify", "--dir", str(empty)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("spool: ok: 0 segments")
