"""`empalinkd --check-config`: the shipped files pass; every error class gives PATH:LINE:COL and exit 2."""
import json
import os
import re
import tomllib

import pytest

from conftest import ROOT, run

LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.+)$")


def check(binaries, path, *extra):
    return run([str(binaries / "empalinkd"), "--check-config", "--config", str(path), *extra])


def check_text(binaries, tmp_path, text, name="agent.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path, check(binaries, path)


def errors(result):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), f"every stderr line must be PATH:LINE:COL: error: MESSAGE, got {lines!r}"
    return [(int(m["line"]), int(m["col"]), m["message"]) for m in parsed]


WARNING = re.compile(r"^(?P<path>.+?)(:\d+:\d+)?: warning: (?P<message>.+)$")


def make_key(binaries, keyring, devices="*"):
    """`empalinkctl key add`: stores the hash in `keyring`, returns the key."""
    made = run([str(binaries / "empalinkctl"), "key", "add", "--devices", devices, "--keyring", str(keyring)])
    assert made.returncode == 0, made.stderr
    return made.stdout.strip().splitlines()[0]


def test_shipped_file_is_valid_and_warns_that_it_connects_nothing(binaries):
    result = check(binaries, ROOT / "Config" / "empalinkd.toml")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines and all(WARNING.match(line) for line in lines), lines
    assert any("no API key" in line and "no wristband will be connected" in line for line in lines), lines
    assert any("no [[wristband]]" in line for line in lines), lines


def test_demo_configuration_is_valid_once_make_demo_made_its_key(binaries, tmp_path):
    # demo.toml names ../.build/demo/{api-key,keyring.toml}; scripts/demo.sh creates them, as done here.
    (tmp_path / "Config").mkdir()
    (tmp_path / ".build" / "demo").mkdir(parents=True)
    config = tmp_path / "Config" / "demo.toml"
    config.write_text((ROOT / "Config" / "demo.toml").read_text())
    key = make_key(binaries, tmp_path / ".build" / "demo" / "keyring.toml")
    (tmp_path / ".build" / "demo" / "api-key").write_text(key + "\n")
    result = check(binaries, config)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def auth_config(tmp_path, key_file, keyring, extra=""):
    path = tmp_path / "agent.toml"
    path.write_text(f'[auth]\napi_key_file = "{key_file}"\nkeyring = "{keyring}"\n'
                    f'[[wristband]]\nserial = "9ff167"\n{extra}')
    return path


def file_error(binaries, path, line, col, fragment):
    result = check(binaries, path)
    found = errors(result)
    assert (line, col, ) in [(l, c) for l, c, _ in found], found
    assert any(fragment in message for _, _, message in found), (fragment, found)
    return found


def test_missing_or_empty_api_key_file_is_an_error(binaries, tmp_path):
    keyring = tmp_path / "keyring.toml"
    make_key(binaries, keyring)
    path = auth_config(tmp_path, tmp_path / "nope", keyring)
    file_error(binaries, path, 2, 16, "No such file or directory")
    (tmp_path / "empty").write_text("\n")
    path = auth_config(tmp_path, tmp_path / "empty", keyring)
    file_error(binaries, path, 2, 16, "first line is empty")


def test_missing_invalid_or_refusing_keyring_is_an_error(binaries, tmp_path):
    key = make_key(binaries, tmp_path / "keyring.toml")
    (tmp_path / "api-key").write_text(key + "\n")
    path = auth_config(tmp_path, tmp_path / "api-key", tmp_path / "no-keyring.toml")
    file_error(binaries, path, 3, 11, "cannot read the keyring")
    (tmp_path / "bad.toml").write_text('[[key]]\nsha256 = "xyz"\n')
    path = auth_config(tmp_path, tmp_path / "api-key", tmp_path / "bad.toml")
    file_error(binaries, path, 3, 11, "invalid keyring")
    make_key(binaries, tmp_path / "other.toml")
    path = auth_config(tmp_path, tmp_path / "api-key", tmp_path / "other.toml")
    file_error(binaries, path, 2, 16, "the API key is not in the keyring")


def test_unreadable_password_and_certificate_files_are_errors(binaries, tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text(f'[mqtt]\nusername = "u"\npassword_file = "{tmp_path}/pw"\ntls.ca_file = "{tmp_path}/ca.pem"\n')
    found = errors(check(binaries, path))
    assert (3, 17) in [(l, c) for l, c, _ in found] and (4, 15) in [(l, c) for l, c, _ in found], found


def test_key_that_unlocks_no_whitelisted_wristband_only_warns(binaries, tmp_path):
    key = make_key(binaries, tmp_path / "keyring.toml", devices="a00101")
    (tmp_path / "api-key").write_text(key + "\n")
    path = auth_config(tmp_path, tmp_path / "api-key", tmp_path / "keyring.toml")
    result = check(binaries, path)
    assert result.returncode == 0, result.stderr
    assert "warning: wristband 9ff167 is whitelisted but the API key does not unlock it" in result.stderr


def test_daemon_exits_2_at_start_on_an_unreadable_api_key_file(binaries, tmp_path):
    # Exit 1 would be restarted every 5 s by the unit; 2 is RestartPreventExitStatus.
    keyring = tmp_path / "keyring.toml"
    make_key(binaries, keyring)
    path = auth_config(tmp_path, tmp_path / "nope", keyring,
                       extra=f'[agent]\ncontrol_socket = "{tmp_path}/c.sock"\n[spool]\ndir = "{tmp_path}/spool"\n'
                             '[mqtt]\nport = 1\n')
    result = run([str(binaries / "empalinkd"), "--config", str(path)], timeout=20,
                 env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={tmp_path}/no-bus"))
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "error: auth.api_key_file:" in result.stderr and "No such file or directory" in result.stderr


def test_json_is_the_full_defaulted_configuration(binaries, tmp_path):
    path = tmp_path / "empty.toml"
    path.write_text("")
    result = check(binaries, path, "--json")
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    assert list(config) == ["agent", "auth", "bluetooth", "wristband", "mqtt", "publish", "spool", "control",
                            "fleet"]
    assert config["agent"]["log_level"] == "info"
    assert config["agent"]["id"]  # the host name
    assert config["bluetooth"] == {
        "adapter": "hci0", "mode": "active", "rssi_min": -100, "max_connections": 5, "connect_timeout_s": 20,
        "reconnect_initial_s": 1, "reconnect_max_s": 60, "background_scan_window_s": 10,
        "background_scan_interval_s": 120, "watchdog_s": 60,
    }
    assert config["wristband"] == []
    assert config["mqtt"]["port"] == 1883
    assert config["mqtt"]["client_id"] == "empalink-" + config["agent"]["id"]
    assert config["mqtt"]["tls"] == {"ca_file": None, "ca_path": None, "cert_file": None, "key_file": None,
                                     "insecure": False}
    assert config["publish"]["streams"] == ["bvp", "gsr", "acc", "temp", "ibi", "hr", "battery", "tag", "contact"]
    assert config["spool"]["max_bytes"] == 268435456
    assert config["control"] == {"mqtt_commands": False}
    assert config["fleet"] == {"enabled": False}


def test_json_resolves_derived_values(binaries, tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "ca.pem").write_text("")  # --check-config reads the files the configuration names
    path = tmp_path / "conf" / "agent.toml"
    path.write_text(
        '[agent]\nid = "ward-3"\n[mqtt]\ntls.ca_file = "ca.pem"\n'
        '[[wristband]]\naddress = "00:07:80:9f:f1:67"\n[[wristband]]\nserial = "A00102"\nlabel = "bed 2"\n'
        '[[wristband]]\naddress = "a0:9e:1a:b0:01:03"\nprofile = "hrs"\nid = "strap-3"\n'
        '[spool]\ndir = "../spool"\n'
    )
    result = check(binaries, path, "--json")
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    assert config["mqtt"]["port"] == 8883, "TLS switches the default port"
    assert config["mqtt"]["client_id"] == "empalink-ward-3"
    assert config["mqtt"]["tls"]["ca_file"] == str(tmp_path / "conf" / "ca.pem")
    assert config["spool"]["dir"] == str(tmp_path / "conf" / ".." / "spool")
    assert config["wristband"] == [
        {"serial": "9ff167", "address": "00:07:80:9F:F1:67", "label": "", "profile": None, "id": "9ff167"},
        {"serial": "a00102", "address": None, "label": "bed 2", "profile": None, "id": "a00102"},
        {"serial": "b00103", "address": "A0:9E:1A:B0:01:03", "label": "", "profile": "hrs", "id": "strap-3"},
    ]


ERROR_CASES = [
    # (name, document, line, column, message fragment)
    ("syntax: unterminated table header", '[agent\nid = "x"\n', 1, 7, "]"),
    ("syntax: missing value", "[agent]\nid =\n", 2, 5, "value"),
    ("duplicate key", '[agent]\nid = "a"\nid = "b"\n', 3, 1, "duplicate key"),
    ("duplicate table", "[agent]\n[bluetooth]\n[agent]\n", 3, 1, "agent"),
    ("unknown key with hint", "[bluetooth]\nrssi_mn = -80\n", 2, 1, 'unknown key "rssi_mn" in [bluetooth]; did you mean "rssi_min"?'),
    ("unknown section", "[bluetoth]\nmode = \"active\"\n", 1, 2, 'unknown section "bluetoth"; did you mean "bluetooth"?'),
    ("wrong type", '[bluetooth]\nrssi_min = "-80"\n', 2, 12, "bluetooth.rssi_min: expected an integer, found a string"),
    ("wrong type: boolean", "[control]\nmqtt_commands = 1\n", 2, 17, "expected a boolean"),
    ("wrong type: section", 'mqtt = "localhost"\n', 1, 8, "mqtt: expected a table"),
    ("out of range", "[mqtt]\nport = 70000\n", 2, 8, "mqtt.port: 70000 is out of range; expected 1 … 65535"),
    ("out of range: negative", "[bluetooth]\nmax_connections = 0\n", 2, 19, "expected 1 … 32"),
    ("bad enum", '[bluetooth]\nmode = "pasive"\n', 2, 8, 'bluetooth.mode: expected "active" or "background", found "pasive"'),
    ("malformed serial", '[[wristband]]\nserial = "9ff16"\n', 2, 10, 'is not a serial; expected 6 hex digits'),
    ("malformed address", '[[wristband]]\naddress = "00:07:80:9F:F1"\n', 2, 11, "is not a Bluetooth address"),
    ("serial does not match address", '[[wristband]]\nserial = "111111"\naddress = "00:07:80:9F:F1:67"\n',
     2, 10, 'does not match address'),
    ("wristband without identity", '[[wristband]]\nlabel = "bed"\n', 1, 1, "needs a serial or an address"),
    ("duplicate wristband", '[[wristband]]\nserial = "9ff167"\n[[wristband]]\naddress = "00:07:80:9F:F1:67"\n',
     3, 1, "listed twice"),
    ("unknown profile", '[[wristband]]\nserial = "9ff167"\nprofile = "ecg"\n', 3, 11, 'expected "e4" or "hrs", found "ecg"'),
    ("id taken by another serial", '[[wristband]]\nserial = "9ff167"\n[[wristband]]\nserial = "a00102"\n'
     'id = "9ff167"\n', 5, 6, 'id "9ff167" is already a wristband'),
    ("unknown stream", '[publish]\nstreams = ["bvp", "ecg"]\n', 2, 19, 'unknown stream "ecg"'),
    ("cross-key: backoff", "[bluetooth]\nreconnect_initial_s = 30\nreconnect_max_s = 10\n", 3, 19,
     "less than reconnect_initial_s"),
    ("cross-key: segment", "[spool]\nmax_bytes = 1048576\nsegment_bytes = 2097152\n", 3, 17, "larger than spool.max_bytes"),
    ("cross-key: tls pair", '[mqtt]\ntls.cert_file = "/c.pem"\n', 2, 17, "needs tls.key_file"),
    ("cross-key: insecure without tls", '[mqtt]\ntls.insecure = true\n', 2, 16, "has no effect without TLS"),
    ("socket path too long", '[agent]\ncontrol_socket = "/' + "x" * 120 + '"\n', 2, 18, "at most 107"),
    ("date/time value", "[agent]\nid = 1979-05-27\n", 2, 6, "date"),
    ("bad topic prefix", '[mqtt]\ntopic_prefix = "a/#"\n', 2, 16, "is not a topic prefix"),
]


@pytest.mark.parametrize("name,text,line,col,fragment", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_each_error_class_names_line_column_and_expectation(binaries, tmp_path, name, text, line, col, fragment):
    path, result = check_text(binaries, tmp_path, text)
    found = errors(result)
    assert result.stderr.startswith(f"{path}:"), result.stderr
    assert (line, col) in [(l, c) for l, c, _ in found], f"{name}: expected an error at {line}:{col}, got {found}"
    assert any(fragment in message for _, _, message in found), f"{name}: {fragment!r} not in {found}"
    assert result.stdout == ""


def test_every_validation_error_is_reported_in_file_order(binaries, tmp_path):
    _, result = check_text(binaries, tmp_path,
                           '[mqtt]\nqos = 3\nport = "x"\n[bluetooth]\nmod = "active"\n[[wristband]]\nserial = "zz"\n')
    found = errors(result)
    assert [(l, c) for l, c, _ in found] == [(2, 7), (3, 8), (5, 1), (7, 10)]


def test_missing_file_is_one_clear_line(binaries, tmp_path):
    path = tmp_path / "nope.toml"
    result = check(binaries, path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"{path}: error: cannot read configuration file: No such file or directory"


def test_directory_instead_of_file(binaries, tmp_path):
    result = check(binaries, tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"{tmp_path}: error: cannot read configuration file: Is a directory"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user")
def test_unreadable_file(binaries, tmp_path):
    path = tmp_path / "secret.toml"
    path.write_text("[agent]\n")
    path.chmod(0o600)
    tmp_path.chmod(0o755)

    def drop():
        os.setgid(65534)
        os.setuid(65534)

    result = run([str(binaries / "empalinkd"), "--check-config", "--config", str(path)], preexec_fn=drop)
    assert result.returncode == 2
    assert result.stderr.strip() == f"{path}: error: cannot read configuration file: Permission denied"


@pytest.mark.parametrize("args", [["--frobnicate"], ["--json"], ["--config"], ["--check-config", "extra"]])
def test_usage_errors_exit_2_with_usage(binaries, args):
    result = run([str(binaries / "empalinkd"), *args])
    assert result.returncode == 2
    assert result.stderr.startswith("empalinkd: ")
    assert "usage: empalinkd" in result.stderr


def test_version_and_help(binaries):
    version = run([str(binaries / "empalinkd"), "--version"])
    assert version.returncode == 0 and re.match(r"^empalinkd \d+\.\d+\.\d+$", version.stdout.strip())
    help = run([str(binaries / "empalinkd"), "--help"])
    assert help.returncode == 0 and "--check-config" in help.stdout


def test_reference_document_matches_the_validator(binaries):
    result = run([str(binaries / "empalinkctl"), "config-reference"])
    assert result.returncode == 0
    committed = (ROOT / "Docs" / "configuration.md").read_text()
    assert committed == result.stdout, "Docs/configuration.md is stale: run `make docs`"


def test_shipped_file_documents_every_key_with_its_default(binaries, tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    defaults = json.loads(check(binaries, empty, "--json").stdout)
    shipped = (ROOT / "Config" / "empalinkd.toml").read_text()
    # Uncomment every `# key = value` line: the result must be valid TOML whose values equal the defaults,
    # apart from keys whose default is derived from the machine (shown with an example) or unset.
    uncommented = "\n".join(
        line[2:] if re.match(r"^# [a-z_.]+ = ", line) else line for line in shipped.splitlines()
    )
    uncommented = uncommented.replace("# [[wristband]]", "[[wristband]]")
    documented = tomllib.loads(uncommented)
    derived = {("agent", "id"), ("mqtt", "client_id")}
    for section, keys in defaults.items():
        if section == "wristband":
            assert set(documented["wristband"][0]) == {"serial", "address", "label", "profile", "id"}
            continue
        flat = {}
        for key, value in keys.items():
            if isinstance(value, dict):
                flat.update({(key, k): v for k, v in value.items()})
            else:
                flat[(key,)] = value
        for path, value in flat.items():
            node = documented[section]
            for part in path:
                assert part in node, f"Config/empalinkd.toml does not document {section}.{'.'.join(path)}"
                node = node[part]
            if value is not None and (section, path[0]) not in derived:
                assert node == value, f"{section}.{'.'.join(path)}: file says {node!r}, default is {value!r}"
