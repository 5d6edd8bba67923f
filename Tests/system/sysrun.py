"""Boots the system-test VM of issue 17 once and collects what it wrote.

The VM boots the real-BlueZ test's kernel and initramfs (vm/build-assets.sh) over its own rootfs with systemd
(vm/build-system-assets.sh); the initramfs hands over to vm/system-boot.sh, which exec's systemd as PID 1, and
systemd runs vm/system-run.sh, which installs the package, drives the unit with systemctl and saves evidence.
qemu runs under a hard wall-clock timeout and is killed by PID when it overstays.
"""
import dataclasses
import os
import json
import pathlib
import re
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "bluez"))
import vmrun  # noqa: E402  (Message, collect: the share's layout is the same)

# Milestones in the order the VM reaches them, with the names the report prints.
MILESTONES = (
    ("vm_up", "systemd started the test driver"),
    ("systemd_up", "systemd PID 1, system running"),
    ("bluetoothd_up", "bluetooth.service on the bus"),
    ("controllers_present", "btvirt controllers present"),
    ("controllers_set_up", "controllers set up (adapters on D-Bus)"),
    ("controllers_up", "controllers powered"),
    ("advertising", "peripheral advertising"),
    ("broker_up", "mosquitto.service up"),
    ("installed", "apt install ./empalink-edge.deb"),
    ("configured", "key, whitelist, broker configured"),
    ("started", "systemctl start → active (READY)"),
    ("not_allowed", "unlisted wristband refused"),
    ("reloaded", "systemctl reload (whitelist)"),
    ("connected", "wristband connected"),
    ("status_line", "systemctl status: STATUS line"),
    ("security_measured", "systemd-analyze security (live)"),
    ("all_streams", "every stream on the broker (IBI, HR)"),
    ("spooling", "broker stopped, agent spools"),
    ("killed", "kill -9"),
    ("restarted", "Restart= brought it back"),
    ("broker_back", "broker started again"),
    ("replayed", "spool replayed after kill -9"),
    ("restreaming", "live data again"),
    ("stalled", "SIGSTOP (stalled loop)"),
    ("watchdog_fired", "watchdog timeout"),
    ("watchdog_restarted", "restarted after the watchdog"),
    ("watchdog_restreaming", "streaming after the watchdog"),
    ("stopped", "systemctl stop"),
    ("offline_published", "offline status on the broker"),
    ("started_again", "started for the upgrade"),
    ("upgraded", "upgrade to the higher version"),
    ("upgraded_running", "agent restarted by postinst"),
    ("purged", "apt purge"),
    ("done", "VM done"),
)

# Failures of the virtual controllers' bring-up, before anything of ours runs: worth one more boot.
RETRIED_MILESTONES = ("controllers_present", "controllers_set_up", "bluetoothd_up", "controllers_up")
UPGRADE_SUFFIX = "+systest1"


@dataclasses.dataclass
class SystemRun:
    run: vmrun.VMRun
    facts: dict
    debs: dict

    def __getattr__(self, name):
        return getattr(self.run, name)

    def evidence(self, name):
        path = self.run.results / "evidence" / name
        return path.read_text(errors="replace") if path.exists() else ""

    def journal(self):
        """The agent's journal entries (`journalctl -u empalinkd -o json`), one dict per entry."""
        entries = []
        for line in self.run.text("journal-empalinkd.json").splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                pass
        return entries

    def security_score(self):
        match = re.search(r"Overall exposure level for empalinkd\.service: ([0-9.]+) (\w+)",
                          self.evidence("security.txt"))
        return (float(match.group(1)), match.group(2)) if match else None

    def diagnostics(self):
        parts = [self.run.diagnostics()]
        for name in ("failure-tails.txt",):
            text = self.run.text(name)
            if text:
                parts.append(f"----- {name} -----\n{text[-6000:]}")
        log = self.run.text("system-run.log")
        if log:
            parts.append("----- system-run.log (tail) -----\n" + "\n".join(log.splitlines()[-30:]))
        return "\n".join(parts)


def build_assets(cache, bluez_cache):
    """Runs vm/build-system-assets.sh (a no-op when both caches are current); returns the cache directory."""
    result = subprocess.run(["bash", str(ROOT / "vm" / "build-system-assets.sh"), str(cache), str(bluez_cache)],
                            capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"building the system VM assets failed:\n{result.stderr[-3000:]}")
    return pathlib.Path(result.stdout.strip().splitlines()[-1])


def package_upgrade(bin_dir, deb, out_dir):
    """The same build packaged again by deploy/build-deb.sh with a higher version (the upgrade's package)."""
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    env = dict(os.environ, EMPALINK_DEB_VERSION=version + UPGRADE_SUFFIX)
    result = subprocess.run(["bash", str(ROOT / "deploy" / "build-deb.sh"), str(bin_dir), str(out_dir)],
                            capture_output=True, text=True, timeout=300, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"packaging the upgrade failed:\n{result.stderr[-3000:]}")
    return pathlib.Path(result.stdout.strip().splitlines()[-1])


def run_vm(bin_dir, deb, work, cache, bluez_cache, timeout_s=1200, stall_s=300, params=None):
    """Boots the VM with the package `deb` (and its higher-version twin) on the share; returns a `SystemRun`."""
    started = time.monotonic()
    cache = build_assets(cache, bluez_cache)
    kernel_dir = (cache / "bluez-vm").resolve()
    if work.exists():
        shutil.rmtree(work)
    share = work / "share"
    for sub in ("bin", "results", "deb", "deb-upgrade"):
        (share / sub).mkdir(parents=True)
    sim = pathlib.Path(bin_dir) / "empalink-sim"
    if not sim.exists():
        raise RuntimeError(f"{sim} is missing: build the static binaries first (make test-system does)")
    shutil.copy2(sim, share / "bin" / "empalink-sim")
    shutil.copy2(deb, share / "deb" / pathlib.Path(deb).name)
    upgrade = package_upgrade(bin_dir, deb, work / "deb-upgrade-build")
    shutil.copy2(upgrade, share / "deb-upgrade" / upgrade.name)
    shutil.copy2(ROOT / "vm" / "system-boot.sh", share / "vm-run.sh")
    shutil.copy2(ROOT / "vm" / "system-run.sh", share / "system-run.sh")
    (share / "vm-run.sh").chmod(0o755)
    if params:
        (share / "params").write_text("".join(f"{key}={value}\n" for key, value in params.items()))
    assets_s = time.monotonic() - started

    console = work / "console.log"
    command = [
        "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2", "-m", "1024",
        "-display", "none", "-monitor", "none", "-serial", f"file:{console}", "-no-reboot", "-nic", "none",
        "-kernel", str(kernel_dir / "kernel" / "vmlinuz"), "-initrd", str(kernel_dir / "initramfs.cpio.gz"),
        "-append", "console=ttyS0 panic=-1 quiet loglevel=3 systemd.show_status=auto",
        "-virtfs", f"local,path={cache / 'rootfs'},mount_tag=rootfs,security_model=none,readonly=on",
        "-virtfs", f"local,path={share},mount_tag=share,security_model=none",
    ]
    boot = time.monotonic()
    qemu = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=open(work / "qemu.log", "w"),
                            stderr=subprocess.STDOUT)
    # Every step in the VM is bounded by its own limit and fails with its name, so the host only has to catch a VM
    # that stopped making progress (a hung kernel, a driver that never returns): no new milestone for `stall_s`
    # (longer than the longest step's limit, T_UPGRADE) or, on a host so loaded that it crawls, `timeout_s` in all.
    # A fixed 600 s limit killed a run at load 14 that was still progressing (vm/README.md).
    progress = share / "results" / "milestones"
    last_change, last_size = boot, -1
    timed_out = None
    while (exit_code := qemu.poll()) is None:
        now = time.monotonic()
        size = progress.stat().st_size if progress.exists() else 0
        if size != last_size:
            last_change, last_size = now, size
        if now - last_change > stall_s:
            timed_out = f"no new milestone for {stall_s} s"
        elif now - boot > timeout_s:
            timed_out = f"qemu ran longer than {timeout_s} s"
        if timed_out:
            qemu.kill()
            exit_code = qemu.wait(timeout=10)
            break
        time.sleep(1)
    wall_s = time.monotonic() - boot
    return collect(work, exit_code=exit_code, timed_out=timed_out, wall_s=wall_s, assets_s=assets_s,
                   debs={"install": pathlib.Path(deb).name, "upgrade": upgrade.name})


def collect(work, debs=None, **kwargs):
    run = vmrun.collect(work, **kwargs)
    facts = {}
    for line in run.text("facts").splitlines():
        key, _, value = line.partition(" ")
        facts[key] = value.strip()
    return SystemRun(run=run, facts=facts, debs=debs or {})


def report(run):
    """The milestone table: seconds since the VM's kernel started, and the step durations measured in the VM."""
    killed = f" (KILLED: {run.timed_out})" if isinstance(run.timed_out, str) else " (TIMED OUT)" if run.timed_out else ""
    lines = [f"system VM run: assets and packaging {run.assets_s:.1f} s, qemu {run.wall_s:.1f} s wall{killed}"]
    uptime = run.text("uptime_at_vm_up").strip()
    base = run.milestones.get("vm_up")
    offset = float(uptime) if uptime else 0.0
    previous = None
    for key, label in MILESTONES:
        if key in run.milestones and base is not None:
            at = run.milestones[key] - base + offset
            step = f"(+{at - previous:5.1f})" if previous is not None else ""
            lines.append(f"  {label:36s} {at:7.1f} s {step}")
            previous = at
        elif run.failed == key:
            lines.append(f"  {label:36s}  FAILED")
        else:
            lines.append(f"  {label:36s}       —")
    durations = ", ".join(f"{k.removesuffix('_s')} {v} s" for k, v in run.facts.items() if k.endswith("_s"))
    if durations:
        lines.append(f"  measured: {durations}")
    if "btvirt_attempts" in run.facts:
        lines.append(f"  btvirt started {run.facts['btvirt_attempts']} time(s) until both controllers were set up "
                     f"(vm/FINDINGS.md S6)")
    score = run.security_score()
    lines.append(f"  systemd-analyze security empalinkd.service (running unit): "
                 f"{f'{score[0]} {score[1]}' if score else 'not measured'}")
    return "\n".join(lines)
