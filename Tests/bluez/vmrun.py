"""Boots the real-BlueZ VM of issue #10 once and collects what it wrote.

The VM (vm/build-assets.sh, vm/initramfs-init, vm/vm-run.sh) runs Debian's bluetoothd 5.66 on two btvirt LE
controllers, `empalink-sim --peripheral` on hci1, mosquitto, a subscriber and `empalinkd` on hci0. Everything it
produces lands in the share's results directory; this module reads it into a `VMRun` for the checks in
test_real_bluez.py. qemu runs under a hard wall-clock timeout and is killed by PID when it overstays.
"""
import csv
import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARIES = ("empalinkd", "empalink-sim", "empalinkctl")

# Milestones in the order the VM reaches them, with the names the report prints.
MILESTONES = (
    ("vm_up", "VM up"),
    ("controllers_present", "btvirt controllers present"),
    ("bluetoothd_up", "bluetoothd on the bus"),
    ("controllers_up", "controllers up (powered)"),
    ("advertising", "peripheral advertising"),
    ("agent_started", "empalinkd started"),
    ("discovered", "discovered"),
    ("connected", "connected"),
    ("services_resolved", "services resolved"),
    ("first_notification", "first notification (over MQTT)"),
    ("streamed", "first session streamed"),
    ("drop_link", "peripheral drops the link"),
    ("disconnected", "link down (bluetoothd)"),
    ("reconnected", "reconnected (bluetoothd)"),
    ("restreaming", "streaming again"),
    ("restreamed", "second session streamed"),
    ("hrs_e4_gone", "E4 peripheral stopped"),
    ("hrs_advertising", "heart-rate strap advertising"),
    ("hrs_discovered", "strap discovered"),
    ("hrs_connected", "strap connected"),
    ("hrs_streaming", "strap HR and RR over MQTT"),
    ("hrs_streamed", "strap streamed"),
    ("done", "VM done"),
)


# Failures of the virtual controllers' bring-up, before anything of ours runs: worth one more boot.
RETRIED_MILESTONES = ("controllers_present", "bluetoothd_up", "controllers_up")


@dataclasses.dataclass
class Message:
    arrival: float
    retained: bool
    topic: str
    payload: str

    @property
    def json(self):
        try:
            return json.loads(self.payload)
        except ValueError:
            return None


@dataclasses.dataclass
class VMRun:
    results: pathlib.Path
    exit_code: int | None
    timed_out: bool
    wall_s: float
    assets_s: float
    milestones: dict
    failed: str | None
    messages: list

    def log(self, name, lines=40):
        path = self.results / f"{name}.log"
        if not path.exists():
            return f"({name}.log missing)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def text(self, name):
        path = self.results / name
        return path.read_text(errors="replace") if path.exists() else ""

    def identity(self):
        pairs = (line.split(" ", 1) for line in self.text("identity").splitlines() if " " in line)
        return {key: value.strip() for key, value in pairs}

    def truth(self, serial, name):
        path = self.results / "truth" / serial / f"{name}.csv"
        if not path.exists():
            return None
        with open(path) as f:
            return list(csv.DictReader(f))

    def diagnostics(self):
        """What a failure message shows: the console tail and the tails of the VM's logs."""
        parts = [f"qemu exit {self.exit_code}, timed out: {self.timed_out}, failed milestone: {self.failed}"]
        console = self.results.parent / "console.log"
        if console.exists():
            parts.append("----- console (tail) -----\n" + "\n".join(
                console.read_text(errors="replace").splitlines()[-30:]))
        for name in ("btvirt", "bluetoothd", "peripheral", "empalinkd"):
            parts.append(f"----- {name}.log (tail) -----\n{self.log(name, 25)}")
        return "\n".join(parts)


def build_assets(cache):
    """Runs vm/build-assets.sh (a no-op when the cache is current); returns the cache directory."""
    result = subprocess.run(["bash", str(ROOT / "vm" / "build-assets.sh"), str(cache)], capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"building the VM assets failed:\n{result.stderr[-3000:]}")
    return pathlib.Path(result.stdout.strip().splitlines()[-1])


def run_vm(bin_dir, work, cache, timeout_s=240, params=None, extra_files=()):
    """Boots the VM with the binaries of `bin_dir` on the share; returns a `VMRun`.

    `work` is emptied first; it holds the share (`work/share`) and the serial console log (`work/console.log`).
    """
    started = time.monotonic()
    cache = build_assets(cache)
    assets_s = time.monotonic() - started

    if work.exists():
        shutil.rmtree(work)
    share = work / "share"
    (share / "bin").mkdir(parents=True)
    (share / "results").mkdir()
    for name in BINARIES:
        source = pathlib.Path(bin_dir) / name
        if not source.exists():
            raise RuntimeError(f"{source} is missing: build the static binaries first (make test-bluez does)")
        shutil.copy2(source, share / "bin" / name)
    shutil.copy2(ROOT / "vm" / "vm-run.sh", share / "vm-run.sh")
    for extra in extra_files:
        shutil.copy2(extra, share / pathlib.Path(extra).name)
    if params:
        (share / "params").write_text("".join(f"{key}={value}\n" for key, value in params.items()))

    console = work / "console.log"
    command = [
        "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2", "-m", "1024",
        "-display", "none", "-monitor", "none", "-serial", f"file:{console}", "-no-reboot", "-nic", "none",
        "-kernel", str(cache / "kernel" / "vmlinuz"), "-initrd", str(cache / "initramfs.cpio.gz"),
        "-append", "console=ttyS0 panic=-1 quiet loglevel=3",
        "-virtfs", f"local,path={cache / 'rootfs'},mount_tag=rootfs,security_model=none,readonly=on",
        "-virtfs", f"local,path={share},mount_tag=share,security_model=none",
    ]
    boot = time.monotonic()
    qemu = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=open(work / "qemu.log", "w"),
                            stderr=subprocess.STDOUT)
    timed_out = False
    try:
        exit_code = qemu.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        qemu.kill()
        exit_code = qemu.wait(timeout=10)
    wall_s = time.monotonic() - boot

    return collect(work, exit_code=exit_code, timed_out=timed_out, wall_s=wall_s, assets_s=assets_s)


def collect(work, exit_code=None, timed_out=False, wall_s=0.0, assets_s=0.0):
    """Reads what the VM left in `work/share/results` (also usable on an earlier run's directory)."""
    results = pathlib.Path(work) / "share" / "results"
    milestones, failed = {}, None
    milestones_path = results / "milestones"
    if milestones_path.exists():
        for line in milestones_path.read_text().splitlines():
            fields = line.split()
            if fields and fields[0] == "FAILED":
                failed = fields[1]
            elif len(fields) == 2:
                milestones.setdefault(fields[0], float(fields[1]))
    messages = []
    mqtt_path = results / "mqtt.tsv"
    if mqtt_path.exists():
        for line in mqtt_path.read_text(errors="replace").splitlines():
            fields = line.split("\t", 3)
            if len(fields) == 4:
                messages.append(Message(float(fields[0]), fields[1] == "1", fields[2], fields[3]))
    return VMRun(results=results, exit_code=exit_code, timed_out=timed_out, wall_s=wall_s, assets_s=assets_s,
                 milestones=milestones, failed=failed, messages=messages)


def report(run):
    """The milestone table: seconds since the VM's kernel started (the VM's own clock, offset by its uptime at
    `vm_up`), plus the host's view of the whole run."""
    lines = [f"real-BlueZ VM run: assets {run.assets_s:.1f} s, qemu {run.wall_s:.1f} s wall"
             f"{' (TIMED OUT)' if run.timed_out else ''}"]
    uptime = run.text("uptime_at_vm_up").strip()
    base = run.milestones.get("vm_up")
    offset = float(uptime) if uptime else 0.0
    for key, label in MILESTONES:
        if key in run.milestones and base is not None:
            lines.append(f"  {label:34s} {run.milestones[key] - base + offset:7.1f} s")
        elif run.failed == key:
            lines.append(f"  {label:34s}  FAILED")
        else:
            lines.append(f"  {label:34s}       —")
    return "\n".join(lines)
