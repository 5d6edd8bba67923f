"""deploy/: the systemd unit verifies and scores as documented; unit, sysusers, tmpfiles, D-Bus policy and the
shipped configuration agree; the Debian package (`make test-deb`) has the expected layout, owners and modes.

The unit checks run in `make test`. The package checks need a package built by `make deb` and run from
`make test-deb`, which names its directory in EMPALINK_DEB_DIR; without it they skip and say so.
"""
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, run

DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "systemd" / "empalinkd.service"
SYSUSERS = DEPLOY / "sysusers.d" / "empalink-edge.conf"
TMPFILES = DEPLOY / "tmpfiles.d" / "empalink-edge.conf"
DBUS_POLICY = DEPLOY / "dbus" / "empalink-edge.conf"
OPERATIONS = ROOT / "Docs" / "operations.md"
SCORE = re.compile(r"Overall exposure level for empalinkd\.service: (\d+\.\d+)")
GOAL = 2.0

needs_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                   reason="systemd-analyze is not installed (Debian package systemd)")


def unit_settings(path=UNIT):
    """The unit's `Key=value` lines as {key: [values]} (sections merged; keys are unique across ours)."""
    settings = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def verifiable_unit(tmp_path, unit_text, empalinkd):
    """The unit with ExecStart pointing at `empalinkd`: verify checks that the command exists and is executable."""
    text = unit_text.replace("ExecStart=/usr/bin/empalinkd", f"ExecStart={empalinkd}", 1)
    assert text != unit_text, "the unit's ExecStart is not /usr/bin/empalinkd"
    path = tmp_path / "empalinkd.service"
    path.write_text(text)
    return path


def analyze_verify(path):
    result = run(["systemd-analyze", "verify", "--man=no", str(path)])
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result
    return result


def exposure(path):
    result = run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(path)])
    assert result.returncode == 0, result.stderr
    match = SCORE.search(result.stdout)
    assert match, result.stdout[-400:]
    return float(match.group(1))


def defaulted_configuration(binaries):
    result = run([str(binaries / "empalinkd"), "--check-config", "--json", "--config",
                  str(ROOT / "Config" / "empalinkd.toml")])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# ---- the unit ------------------------------------------------------------------------------------------------

@needs_analyze
def test_unit_passes_systemd_analyze_verify(binaries, tmp_path):
    analyze_verify(verifiable_unit(tmp_path, UNIT.read_text(), binaries / "empalinkd"))


@needs_analyze
def test_security_exposure_is_at_most_the_documented_score():
    documented = [float(m) for m in SCORE.findall(OPERATIONS.read_text())]
    assert documented, "Docs/operations.md must show `systemd-analyze security` output with the overall score"
    measured = exposure(UNIT)
    assert measured <= min(documented) <= GOAL, (measured, documented)


@needs_analyze
def test_security_score_notices_a_weaker_unit(tmp_path):
    # The score check can fail: the same unit without its sandbox scores far worse.
    weak = [line for line in UNIT.read_text().splitlines()
            if not line.startswith(("Protect", "Private", "SystemCallFilter", "Restrict", "CapabilityBoundingSet"))]
    path = tmp_path / "empalinkd.service"
    path.write_text("\n".join(weak) + "\n")
    assert exposure(path) > exposure(UNIT) + 2.0


def test_unit_is_the_service_spec_12_describes():
    s = unit_settings()
    assert s["Type"] == ["notify"] and s["NotifyAccess"] == ["main"]
    assert s["Restart"] == ["on-failure"] and int(s["WatchdogSec"][0]) > 0
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert s["RestartPreventExitStatus"] == ["2"], "a configuration error (exit 2) must not restart-loop"
    assert s["User"] == ["empalink"] and s["Group"] == ["empalink"]
    assert s["StateDirectory"] == s["ConfigurationDirectory"] == s["RuntimeDirectory"] == ["empalink"]
    assert s["CapabilityBoundingSet"] == [""] and s["NoNewPrivileges"] == ["yes"]
    assert s["ProtectSystem"] == ["strict"] and s["MemoryDenyWriteExecute"] == ["yes"]
    assert s["RestrictAddressFamilies"] == ["AF_UNIX AF_INET AF_INET6"]
    assert "@system-service" in s["SystemCallFilter"]
    # TimeoutStopSec leaves room beyond the agent's own 5 s shutdown budget before systemd sends SIGKILL.
    assert int(s["TimeoutStopSec"][0]) > 5


def test_unit_sysusers_tmpfiles_and_policy_agree():
    s = unit_settings()
    users = [shlex.split(line) for line in SYSUSERS.read_text().splitlines() if line and not line.startswith("#")]
    assert ["u", "empalink"] == users[0][:2] and users[0][4] == "/var/lib/empalink"
    assert ["m", "empalink", "bluetooth"] in users
    pre = s["ExecStartPre"][0]
    assert pre.startswith("+") and pre.endswith(" --create " + TMPFILES.name)
    for line in TMPFILES.read_text().splitlines():
        if line and not line.startswith("#"):
            kind, path, mode, owner, group, _ = line.split()
            assert (kind, mode, owner, group) == ("z", "0640", "root", "empalink") and path.startswith("/etc/empalink/")
    policy = ET.parse(DBUS_POLICY).getroot()
    rules = [(p.attrib, [(r.tag, r.attrib) for r in p]) for p in policy.findall("policy")]
    assert rules == [({"user": "empalink"}, [("allow", {"send_destination": "org.bluez"})])]


def test_shipped_configuration_paths_live_in_the_units_directories(binaries):
    config = defaulted_configuration(binaries)
    s = unit_settings()
    assert s["ExecStart"] == ["/usr/bin/empalinkd --config /etc/empalink/empalinkd.toml"]
    assert config["agent"]["control_socket"].startswith("/run/empalink/")      # RuntimeDirectory
    assert config["spool"]["dir"].startswith("/var/lib/empalink/")             # StateDirectory
    assert config["auth"]["keyring"].startswith("/etc/empalink/")              # ConfigurationDirectory
    tmpfiles_paths = [line.split()[1] for line in TMPFILES.read_text().splitlines()
                      if line and not line.startswith("#")]
    assert config["auth"]["keyring"] in tmpfiles_paths


# ---- the package (make test-deb) -----------------------------------------------------------------------------

def deb_path():
    directory = os.environ.get("EMPALINK_DEB_DIR")
    if not directory:
        pytest.skip("package checks run from `make test-deb` (needs the release build; EMPALINK_DEB_DIR unset)")
    debs = sorted(pathlib.Path(directory).resolve().glob("empalink-edge_*.deb"))
    assert len(debs) == 1, f"expected one package in {directory}, found {debs}"
    return debs[0]


# path -> mode; every entry is owned by root:root.
EXPECTED = {
    "usr/bin/empalinkd": 0o755,
    "usr/bin/empalinkctl": 0o755,
    "lib/systemd/system/empalinkd.service": 0o644,
    "usr/lib/sysusers.d/empalink-edge.conf": 0o644,
    "usr/lib/tmpfiles.d/empalink-edge.conf": 0o644,
    "usr/share/dbus-1/system.d/empalink-edge.conf": 0o644,
    "etc/empalink/empalinkd.toml": 0o644,
    "usr/share/man/man8/empalinkd.8.gz": 0o644,
    "usr/share/man/man1/empalinkctl.1.gz": 0o644,
    "usr/share/doc/empalink-edge/copyright": 0o644,
    "usr/share/doc/empalink-edge/changelog.gz": 0o644,
    "usr/share/doc/empalink-edge/README.md": 0o644,
    "usr/share/doc/empalink-edge/operations.md": 0o644,
    "usr/share/doc/empalink-edge/architecture.md": 0o644,
    "usr/share/doc/empalink-edge/mqtt.md": 0o644,
    "usr/share/doc/empalink-edge/security.md": 0o644,
    "usr/share/doc/empalink-edge/configuration.md": 0o644,
    "usr/share/doc/empalink-edge/protocol-e4.md": 0o644,
    "usr/share/lintian/overrides/empalink-edge": 0o644,
}
LISTING = re.compile(r"^(?P<mode>[-dl][rwxsStT-]{9}) (?P<owner>\S+)\s+\d+ \S+ \S+ \./(?P<path>.*?)/?$")


def mode_bits(text):
    bits = 0
    for i, char in enumerate(text[1:]):
        if char != "-":
            bits |= 1 << (8 - i)
    return bits


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The package unpacked with `dpkg -x` into a scratch root."""
    deb = deb_path()
    root = tmp_path_factory.mktemp("root")
    subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    return deb, root


def test_package_control_fields(scratch):
    deb, _ = scratch
    field = lambda name: run(["dpkg-deb", "-f", str(deb), name]).stdout.strip()
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    assert field("Package") == "empalink-edge" and field("Architecture") == arch
    depends = field("Depends")
    for library in ("libc6", "libdbus-1-3", "libsystemd0", "libssl3", "systemd", "init-system-helpers"):
        assert re.search(rf"(^|, ){re.escape(library)}\b", depends), (library, depends)
    assert "swift" not in depends.lower()
    conffiles = run(["dpkg-deb", "-I", str(deb), "conffiles"]).stdout.split()
    assert conffiles == ["/etc/empalink/empalinkd.toml"]


def test_package_layout_owners_and_modes(scratch):
    deb, root = scratch
    listing = run(["dpkg-deb", "-c", str(deb)]).stdout.splitlines()
    entries = {}
    for line in listing:
        match = LISTING.match(line)
        assert match, line
        assert match["owner"] == "root/root", line
        entries[match["path"]] = match["mode"]
    for path, mode in EXPECTED.items():
        assert path in entries, f"{path} is missing from the package"
        assert entries[path][0] == "-" and mode_bits(entries[path]) == mode, (path, entries[path])
        assert (root / path).is_file()
    unexpected = {p for p, m in entries.items() if m[0] != "d"} - set(EXPECTED)
    assert unexpected <= {f"usr/share/doc/empalink-edge/{n}.md" for n in ("ibi", "mqtt-client")}, unexpected
    for path, mode in entries.items():
        if mode[0] == "d":
            assert mode_bits(mode) == 0o755, (path, mode)


def test_package_md5sums_match_the_files(scratch):
    deb, root = scratch
    lines = run(["dpkg-deb", "-I", str(deb), "md5sums"]).stdout.splitlines()
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert {line.split(maxsplit=1)[1] for line in lines} == files
    result = subprocess.run(["md5sum", "--check", "--quiet"], input="\n".join(lines) + "\n", text=True,
                            capture_output=True, cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr


def test_packaged_binaries_run_on_debian_libraries_only(scratch):
    _, root = scratch
    for program in ("empalinkd", "empalinkctl"):
        path = root / "usr" / "bin" / program
        dynamic = run(["readelf", "-d", str(path)]).stdout
        assert "libswift" not in dynamic and "RUNPATH" not in dynamic and "RPATH" not in dynamic
        assert re.search(r"\bBIND_NOW\b|Flags: NOW", dynamic), f"{program} is not linked with -z now"
        assert ".symtab" not in run(["readelf", "-S", "-W", str(path)]).stdout, f"{program} is not stripped"
    version = run([str(root / "usr/bin/empalinkd"), "--version"])
    assert version.returncode == 0 and version.stdout.startswith("empalinkd ")
    check = run([str(root / "usr/bin/empalinkd"), "--check-config", "--config",
                 str(root / "etc/empalink/empalinkd.toml")])
    assert check.returncode == 0, check.stderr


def test_package_user_and_secret_modes_in_scratch_root(scratch, tmp_path):
    _, packaged = scratch
    root = tmp_path / "root"
    shutil.copytree(packaged, root, symlinks=True)
    result = run(["systemd-sysusers", f"--root={root}", "empalink-edge.conf"])
    assert result.returncode == 0, result.stderr
    passwd = (root / "etc/passwd").read_text()
    assert re.search(r"^empalink:x:\d+:\d+:[^:]*:/var/lib/empalink:/usr/sbin/nologin$", passwd, re.MULTILINE)
    assert re.search(r"^bluetooth:x:\d+:(.*,)?empalink(,.*)?$", (root / "etc/group").read_text(), re.MULTILINE)
    keyring = root / "etc/empalink/keyring.toml"
    keyring.write_text("")
    keyring.chmod(0o600)                       # as `empalinkctl key add` creates it
    result = run(["systemd-tmpfiles", f"--root={root}", "--create", "empalink-edge.conf"])
    assert result.returncode == 0, result.stderr
    group = re.search(r"^empalink:x:(\d+):", (root / "etc/group").read_text(), re.MULTILINE)
    info = keyring.stat()
    assert oct(info.st_mode & 0o777) == oct(0o640) and info.st_uid == 0 and str(info.st_gid) == group.group(1)


@needs_analyze
def test_packaged_unit_verifies(scratch, tmp_path):
    _, root = scratch
    unit = root / "lib/systemd/system/empalinkd.service"
    analyze_verify(verifiable_unit(tmp_path, unit.read_text(), root / "usr/bin/empalinkd"))
    assert exposure(unit) <= GOAL


def test_maintainer_scripts_are_valid_sh(scratch, tmp_path):
    deb, _ = scratch
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", str(deb), str(control)], check=True)
    for script in ("postinst", "prerm", "postrm"):
        path = control / script
        assert path.stat().st_mode & 0o777 == 0o755
        result = run(["sh", "-n", str(path)])
        assert result.returncode == 0, result.stderr


def test_lintian_has_no_unexplained_findings(scratch):
    deb, _ = scratch
    if shutil.which("lintian") is None:
        pytest.skip("lintian is not installed (`make deb` installs it)")
    result = run(["lintian", "--pedantic", "--display-info", "--fail-on", "error,warning,info,pedantic", str(deb)],
                 timeout=300)
    findings = [line for line in result.stdout.splitlines() if re.match(r"^[EWIPX]: ", line)]
    assert result.returncode == 0 and not findings, result.stdout + result.stderr


# ---- the unit's seccomp filters, without systemd (deploy/sandbox-probe.py) -----------------------------------

PROBE = DEPLOY / "sandbox-probe.py"


def probe_available():
    result = run(["/usr/bin/python3", "-c", "import seccomp"])
    return result.returncode == 0


needs_probe = pytest.mark.skipif(not probe_available(),
                                 reason="python3-seccomp is not installed (`make deb` installs it)")


def probed(*command):
    return ["/usr/bin/python3", str(PROBE), "--", *map(str, command)]


@needs_probe
def test_probe_enforces_memory_deny_write_execute_and_address_families():
    # The control: under the probe, a writable+executable mapping and an AF_PACKET socket are refused.
    code = ("import ctypes, socket\n"
            "libc = ctypes.CDLL(None, use_errno=True); libc.mmap.restype = ctypes.c_void_p\n"
            "p = libc.mmap(None, 4096, 7, 0x22, -1, 0)\n"
            "assert p in (None, 2**64 - 1) and ctypes.get_errno() == 1, p\n"
            "assert libc.mmap(None, 4096, 3, 0x22, -1, 0) not in (None, 2**64 - 1)\n"
            "try:\n    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\nexcept OSError as e:\n"
            "    assert e.errno == 97, e\nelse:\n    raise SystemExit('AF_PACKET allowed')\n")
    result = run(probed("/usr/bin/python3", "-c", code))
    assert result.returncode == 0, result.stderr


@needs_probe
def test_agent_checks_configuration_under_the_units_seccomp_filters(binaries):
    result = run(probed(binaries / "empalinkd", "--check-config", "--json", "--config",
                        ROOT / "Config" / "empalinkd.toml"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["spool"]["dir"] == "/var/lib/empalink/spool"


@pytest.fixture
def private_bus(tmp_path):
    """A private dbus-daemon (session type: the simulator may own org.bluez), ended by PID."""
    socket = tmp_path / "bus"
    config = tmp_path / "bus.conf"
    config.write_text(
        '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"\n'
        ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
        f"<busconfig><type>session</type><listen>unix:path={socket}</listen><auth>EXTERNAL</auth>"
        '<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>'
        '<allow own="*"/></policy></busconfig>\n')
    daemon = subprocess.Popen(["/usr/bin/dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if socket.exists() or daemon.poll() is not None:
                break
            time.sleep(0.01)
        assert socket.exists(), "dbus-daemon did not create its socket"
        yield f"unix:path={socket}"
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


@needs_probe
def test_connect_and_stream_from_the_simulator_under_the_units_seccomp_filters(binaries, private_bus, tmp_path):
    # D-Bus, AcquireNotify fd passing, timers, signals and libcrypto, all inside the unit's system-call allow-list,
    # MemoryDenyWriteExecute and RestrictAddressFamilies: empalinkctl scan and capture against empalink-sim.
    sim_path = binaries / "empalink-sim"
    if not sim_path.exists():
        pytest.skip(f"{sim_path} is missing (swift build builds it)")
    sim_log = open(tmp_path / "sim.log", "w")
    sim = subprocess.Popen(probed(sim_path, "--bus", private_bus, "--devices", "2"),
                           stdout=sim_log, stderr=subprocess.STDOUT)
    try:
        keyring = tmp_path / "keyring.toml"
        key = run(probed(binaries / "empalinkctl", "key", "add", "--devices", "*", "--keyring", keyring))
        assert key.returncode == 0, key.stderr
        config = tmp_path / "agent.toml"
        config.write_text(f'[auth]\napi_key = "{key.stdout.strip()}"\nkeyring = "{keyring}"\n'
                          '[[wristband]]\nserial = "a00101"\n')
        env = {**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": private_bus}
        scan = run(probed(binaries / "empalinkctl", "scan", "--seconds", "3", "--config", config), env=env)
        assert scan.returncode == 0, scan.stderr + (tmp_path / "sim.log").read_text()
        assert re.search(r"a00101 .* yes", scan.stdout) and "a00102" in scan.stdout, scan.stdout
        capture = tmp_path / "capture.bin"
        result = run(probed(binaries / "empalinkctl", "capture", "--address", "00:07:80:A0:01:01", "--out", capture,
                            "--seconds", "3", "--config", config), env=env)
        assert result.returncode == 0, result.stderr
        decoded = run(probed(binaries / "empalinkctl", "decode", "--capture", capture))
        assert decoded.returncode == 0, decoded.stderr
        streams = {json.loads(line)["stream"] for line in decoded.stdout.splitlines()}
        assert {"bvp", "acc", "gsr", "temp"} <= streams, streams
    finally:
        sim.terminate()
        sim.wait(timeout=10)
        sim_log.close()
