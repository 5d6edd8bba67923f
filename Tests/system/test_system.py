"""Issue 17: the .deb installed on a Debian bookworm system with systemd as PID 1, run as the packaged unit against
Debian's bluetoothd and mosquitto (vm/system-run.sh drives it; it saves evidence, these tests judge it). Each test
checks one promise of the package, the unit or Docs/operations.md on that recording."""
import re

from conftest import RUN
from sysrun import MILESTONES, ROOT

PREFIX, AGENT = "empalink", "pi"
STREAMS = ("bvp", "acc", "gsr", "temp", "battery", "ibi", "hr")
# Where the agent's mount namespace lets a write through (checked as root inside it, so only mount flags count):
# the unit's StateDirectory and RuntimeDirectory, PrivateTmp's /tmp and /var/tmp, PrivateDevices' /dev/shm, and two
# that systemd 252 leaves writable under ProtectSystem=strict (vm/FINDINGS.md, system test §2): /run itself and the
# ConfigurationDirectory /etc/empalink (root:root 0755, so the agent's user cannot write there anyway).
WRITABLE = {"/var/lib/empalink", "/run/empalink", "/tmp", "/var/tmp", "/dev/shm", "/run", "/etc/empalink"}
MUST_BE_READ_ONLY = {"/", "/run", "/run/lock", "/etc", "/usr", "/usr/bin", "/boot", "/var", "/var/lib", "/var/log",
                     "/home", "/root", "/srv", "/opt", "/dev"}


def fact(line):
    RUN.setdefault("facts", []).append(line)


def serial(system):
    return system.identity()["serial"]


def show(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def sections(text):
    """{name: body} of an evidence file made of `== name` sections."""
    parts = re.split(r"^== (.*)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def test_vm_reached_every_milestone(system):
    missing = [key for key, _ in MILESTONES if key not in system.milestones]
    assert system.failed is None and not system.timed_out and not missing, \
        f"milestones missing: {missing}\n{system.diagnostics()}"


def test_systemd_is_pid_1_and_the_system_came_up(system):
    assert system.text("pid1").split()[-1] == "systemd"
    state = system.evidence("system-state.txt").splitlines()[0]
    assert state in ("running", "degraded"), system.evidence("system-state.txt")


def test_install_creates_the_user_and_leaves_the_unit_disabled(system):
    installed = sections(system.evidence("installed.txt"))
    assert "install ok installed" in installed["dpkg"]
    assert re.search(r"groups=.*\(bluetooth\)", installed["id"]), installed["id"]
    assert installed["passwd"].endswith(":/var/lib/empalink:/usr/sbin/nologin"), installed["passwd"]
    # A fresh agent has no key and no whitelist: the package neither starts nor enables it (Docs/operations.md §2).
    assert installed["is-active"] == "inactive"
    assert installed["is-enabled"] == "disabled", \
        f"the package enabled the unit on a fresh install:\n{system.evidence('apt-install.txt')[-800:]}"
    assert installed["verify"].strip().endswith("rc=0"), installed["verify"]


def test_start_returns_after_ready_with_a_status_line(system):
    started = show(system.evidence("show-started.txt"))
    assert started["Type"] == "notify" and started["ActiveState"] == "active" and started["SubState"] == "running"
    assert started["User"] == "empalink" and started["WatchdogUSec"] == "30s"
    assert "wristbands connected" in started["StatusText"], started
    status = system.evidence("systemctl-status.txt")
    assert re.search(r'Status: "1/1 wristbands connected, Bluetooth \w+, MQTT connected', status), status
    fact(f"  start (systemctl start → READY): {system.facts.get('start_s')} s; STATUS: "
         f"{system.evidence('status-text.txt').strip()}")


def test_the_process_runs_as_empalink_without_capabilities_under_seccomp(system):
    proc = system.evidence("process.txt")
    field = dict(re.findall(r"^(\w+):\s*(.*)$", proc, flags=re.M))
    gids = proc.split("== empalink gids")[1].split()
    uid_gid, bluetooth = gids[0], gids[-1]
    assert set(field["Uid"].split()) == {uid_gid} and set(field["Gid"].split()) == {uid_gid}, field["Uid"]
    assert bluetooth in field["Groups"].split(), f"not in the bluetooth group: {field['Groups']}"
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(field[cap], 16) == 0, f"{cap} {field[cap]}"
    assert field["NoNewPrivs"] == "1"
    assert field["Seccomp"] == "2", "no seccomp filter on the process"
    fact(f"  process: uid {uid_gid}, groups {field['Groups'].strip()}, capabilities none, seccomp filters "
         f"{field.get('Seccomp_filters')}")


def test_the_sandbox_lets_writes_through_only_where_declared(system):
    probes = dict(line.rsplit(" ", 1) for line in system.evidence("write-probes.txt").splitlines())
    writable = {path for path, verdict in probes.items() if verdict == "writable"}
    assert writable <= WRITABLE, f"writable beyond the declared paths: {sorted(writable - WRITABLE)}"
    assert {"/var/lib/empalink", "/run/empalink"} <= writable, probes
    assert not MUST_BE_READ_ONLY & writable, sorted(MUST_BE_READ_ONLY & writable)
    devices = system.evidence("dev.txt").split()
    assert not {"vda", "ttyS0", "vhci", "mem", "kmsg"} & set(devices), f"PrivateDevices= shows {devices}"
    fact(f"  writable in the agent's namespace: {', '.join(sorted(writable))}")


def test_no_syscall_or_permission_was_refused(system):
    journal = system.text("journal.txt")
    assert not re.search(r"SIGSYS|status=31/SYS", journal), "a system call was killed by the filter"
    agent = [e for e in system.journal() if e.get("SYSLOG_IDENTIFIER") == "empalinkd"]
    refused = [e["MESSAGE"] for e in agent
               if re.search(r"not permitted|denied|EPERM|EACCES|read-only file system", e.get("MESSAGE", ""), re.I)]
    assert not refused, refused


def test_the_journal_carries_structured_fields_and_priorities(system):
    agent = [e for e in system.journal() if e.get("SYSLOG_IDENTIFIER") == "empalinkd"]
    assert agent, "no journal entries from empalinkd"
    assert all(e.get("_SYSTEMD_UNIT") == "empalinkd.service" for e in agent)
    fields = {k for e in agent for k in e if not k.startswith("_") and k.isupper()}
    assert {"DEVICE", "STATUS", "BLE_STATUS"} <= fields, sorted(fields)
    assert any(e.get("DEVICE") == serial(system) for e in agent)
    priorities = {e.get("PRIORITY") for e in agent}
    assert "6" in priorities and priorities <= {"3", "4", "6", "7"}, priorities
    # Priorities are the syslog levels: a warning is logged at 4.
    assert any(e.get("PRIORITY") == "4" for e in agent), "no warning (PRIORITY=4) logged in the whole run"
    fact(f"  journal: {len(agent)} agent entries, fields {', '.join(sorted(fields))}, priorities "
         f"{', '.join(sorted(priorities))}")


def test_every_stream_reached_the_broker(system):
    topics = {m.topic for m in system.messages}
    missing = [s for s in STREAMS if f"{PREFIX}/{AGENT}/{serial(system)}/{s}" not in topics]
    assert not missing, f"no {missing} on the broker"


def test_reload_applies_the_whitelist_change(system):
    reload_at = float(system.evidence("reload-at.txt"))
    devices = [m for m in system.messages if m.topic == f"{PREFIX}/{AGENT}/devices" and m.json]
    before = [m for m in devices if m.arrival < reload_at and serial(system) in m.json]
    assert before and before[-1].json[serial(system)]["allowed"] is False, "the unlisted wristband was not refused"
    status = [m for m in system.messages if m.topic == f"{PREFIX}/{AGENT}/{serial(system)}/status" and m.json]
    assert not [m for m in status if m.arrival < reload_at and m.json["status"] == "connected"]
    assert [m for m in status if m.arrival > reload_at and m.json["status"] == "connected"]
    reloaded = [e for e in system.journal() if "configuration reloaded: 1 wristband" in e.get("MESSAGE", "")]
    assert reloaded, "no 'configuration reloaded' in the journal"


def spool_records(text):
    match = re.search(r"^records: (\d+) \((\d+) pending", text, flags=re.M)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def test_restart_after_kill_9_keeps_the_spool_and_replays_it(system):
    before = spool_records(system.evidence("spool-before-kill.txt"))
    after = spool_records(system.evidence("spool-after-restart.txt"))
    assert before[1] > 0, system.evidence("spool-before-kill.txt")
    assert after[0] >= before[0], f"records before the kill {before}, after the restart {after}"
    restarted = show(system.evidence("show-restarted.txt"))
    assert int(restarted["NRestarts"]) >= 1
    assert "code=killed, status=9/KILL" in system.text("journal.txt")
    fact(f"  spool across kill -9: {before[0]} records before, {after[0]} after the restart; restarted "
         f"{system.milestones['restarted'] - system.milestones['killed']:.1f} s after the kill")


def test_the_watchdog_kills_a_stalled_agent_and_restart_brings_it_back(system):
    journal = system.text("journal.txt")
    assert re.search(r"empalinkd\.service: Watchdog timeout \(limit 30s\)", journal)
    assert "empalinkd.service: Main process exited, code=killed, status=6/ABRT" in journal
    fact(f"  watchdog: fired {system.milestones['watchdog_fired'] - system.milestones['stalled']:.1f} s after "
         f"SIGSTOP, active again after "
         f"{system.milestones['watchdog_restarted'] - system.milestones['stalled']:.1f} s")


def test_stop_publishes_offline_and_exits_0_within_5_s(system):
    assert float(system.facts["stop_s"]) < 5.0, system.facts
    stopped = show(system.evidence("show-stopped.txt"))
    assert stopped["Result"] == "success" and stopped["ExecMainStatus"] == "0", stopped
    assert not system.evidence("processes-after-stop.txt").strip(), system.evidence("processes-after-stop.txt")
    assert "offline_published" in system.milestones
    fact(f"  stop: {system.facts['stop_s']} s, exit 0, offline published")


def test_security_score_of_the_running_unit(system):
    score = system.security_score()
    assert score is not None, system.evidence("security.txt")[-2000:]
    documented = re.search(r"Overall exposure level for empalinkd\.service: ([0-9.]+)",
                           (ROOT / "Docs" / "operations.md").read_text())
    assert score[0] <= float(documented.group(1)), f"live score {score} worse than documented {documented.group(1)}"
    fact(f"  systemd-analyze security empalinkd.service on the running system: {score[0]} {score[1]}")


def test_upgrade_keeps_the_edited_conffile_the_spool_and_restarts_the_agent(system):
    upgraded = sections(system.evidence("upgraded.txt"))
    assert "+systest1 install ok installed" in upgraded["dpkg"], upgraded["dpkg"]
    assert upgraded["config md5"] == system.evidence("config-md5-edited.txt").strip(), "the edited conffile changed"
    assert "dpkg-dist" not in upgraded["ls /etc/empalink"] and "dpkg-old" not in upgraded["ls /etc/empalink"]
    assert upgraded["is-enabled"] == "enabled", "the upgrade lost the administrator's enable"
    inode = lambda text: re.findall(r"^(\d+) empalink 700 /var/lib/empalink/spool$", text, flags=re.M)  # noqa: E731
    before = inode(system.evidence("spool-before-upgrade.txt"))
    after = inode(system.evidence("spool-after-upgrade.txt"))
    assert before and before == after, "the spool directory did not survive the upgrade as it was"
    assert spool_records(system.evidence("spool-after-upgrade.txt"))[0] >= 0
    fact(f"  upgrade {system.debs.get('install')} → {system.debs.get('upgrade')}: {system.facts.get('upgrade_s')} s")


def test_purge_leaves_nothing_running_and_removes_the_state(system):
    purged = sections(system.evidence("purged.txt"))
    assert "no packages found" in purged["dpkg"]
    assert purged["processes of empalink"].strip() == "rc=1" and purged["empalinkd processes"].strip() == "rc=1"
    assert "LoadState=not-found" in purged["unit"]
    assert "No such file" in purged["/var/lib/empalink"] and "No such file" in purged["/run/empalink"]
    assert "empalinkd.toml" not in purged["/etc/empalink"], "the conffile survived the purge"
    assert "empalink:" in purged["user"], "the system user was removed (Debian keeps it)"
    assert "empalinkd" not in purged["systemd links"], purged["systemd links"]
    left = [line.split()[-1] for line in purged["/etc/empalink"].splitlines()[3:]]
    fact(f"  purge: {system.facts.get('purge_s')} s; left in /etc/empalink (the operator's own files): {left}")


def test_bluetoothd_survived(system):
    """Not the package's promise, but worth knowing: Debian's bluetooth.service has no Restart=."""
    crashes = re.findall(r".*bluetoothd\[\d+\]: segfault.*", system.text("journal.txt"))
    if crashes:
        fact(f"  bluetoothd crashed {len(crashes)}× (vm/FINDINGS.md, system test): {crashes[0][:100]}")
