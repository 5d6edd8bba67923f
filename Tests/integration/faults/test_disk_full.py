"""Issue 7: the spool's filesystem fills up under the running agent (a real tmpfs of 4 MiB, mounted here as root).

The broker is down, three wristbands stream, and a filler file leaves the spool a few hundred KiB. The agent
must survive ENOSPC (keep running, keep answering, keep its wristbands), count the write errors and drops in its
metrics (per `on_full`), and write again once the filler is removed; with the broker back, what was written after
the space returned is delivered. Skipped, with the reason, where mounting a tmpfs is not permitted.
"""
import os
import subprocess
import time

import pytest

from faultrig import (Agent, Broker, Bus, Processes, Simulator, Subscriber, data_messages, free_port, make_work,
                      remove_work, wait_until)

FS_BYTES = 4 << 20
HEADROOM = 192 << 10


def mount_tmpfs(path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES},mode=0700", "tmpfs", str(path)],
                            capture_output=True, text=True, timeout=20)
    if result.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {result.stderr.strip()}")


@pytest.mark.parametrize("on_full", ["drop_newest", "drop_oldest"])
def test_enospc_is_survived_counted_and_writing_resumes(on_full):
    work = make_work(f"elf-full-{on_full}-")
    mount = work / "fs"
    processes = Processes()
    subscriber = None
    try:
        mount.mkdir()
        mount_tmpfs(mount)
        filler = mount / "filler"
        free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, free - HEADROOM))
        bus = Bus(processes, work)
        Simulator(processes, bus, work, devices=3)
        port = free_port()
        agent = Agent(processes, work, broker_port=port, bus_address=bus.address, spool_dir=mount / "spool",
                      spool={"mode": '"offline"', "on_full": f'"{on_full}"', "segment_bytes": 65536,
                             "max_bytes": 67108864})
        agent.start()
        agent.wait_streaming(3)

        full = agent.wait_status(lambda s: s["metrics"]["spool"]["write_errors"] > 0, 120, "ENOSPC write errors")
        filled_at = time.monotonic()
        time.sleep(3)
        status = agent.status()
        spool = status["metrics"]["spool"]
        assert status["metrics"]["spool"]["last_write_error"], spool
        assert "space" in spool["last_write_error"].lower() or "ENOSPC" in spool["last_write_error"], spool
        assert spool["dropped"] > 0, f"ENOSPC drops are not counted: {spool}"
        reasons = spool["dropped_by_reason"]
        assert sum(reasons.values()) == spool["dropped"], spool
        if on_full == "drop_oldest":
            assert reasons["full_oldest"] > 0, f"drop_oldest evicted nothing: {reasons}"
        else:
            assert reasons["full_oldest"] == 0 and reasons["no_space"] + reasons["full_newest"] > 0, reasons
        assert all(d["status"] == "connected" for d in status["devices"].values()), status["devices"]
        errors_while_full = spool["write_errors"]

        # Space returns.
        filler.unlink()
        freed_at = time.monotonic()
        before = agent.status()["metrics"]["spool"]

        def resumed():
            now = agent.status()["metrics"]["spool"]
            return now if now["bytes"] >= before["bytes"] + 8192 else None
        after = wait_until(resumed, 60, "spool writes to resume after the space returned", interval=0.5)
        resumed_after = time.monotonic() - freed_at
        time.sleep(2)
        settled = agent.status()["metrics"]["spool"]
        time.sleep(3)
        later = agent.status()["metrics"]["spool"]
        assert later["write_errors"] == settled["write_errors"], f"still failing after space returned: {later}"
        assert later["records"] > settled["records"], f"records stopped growing: {settled} → {later}"

        # The broker returns: the spool drains, including what was written after the space came back.
        broker = Broker(processes, work, port=port)
        broker.start()
        subscriber = Subscriber(broker)
        agent.wait_online(timeout=90)
        agent.wait_status(lambda s: s["metrics"]["spool"]["records"] == 0, 120, "the spool to drain")
        final = agent.status()["metrics"]["spool"]
        assert agent.stop() == 0
        agent.assert_no_trap()
        subscriber.fence(broker.port)
        arrived = sum(1 for _ in data_messages(subscriber.snapshot()))
        assert arrived >= later["records"], f"only {arrived} of {later['records']} spooled messages arrived"
        print(f"\ndisk full ({on_full}): ENOSPC after {full['uptime_s']:.0f} s of uptime; {errors_while_full} write "
              f"errors, {spool['dropped']} records dropped while full ('{spool['last_write_error']}'); writing "
              f"resumed {resumed_after:.1f} s after the space returned; {arrived} messages delivered once the "
              f"broker returned (spool then {final['records']} records)")
    finally:
        if subscriber:
            subscriber.close()
        processes.stop_all()
        if os.path.ismount(mount):
            subprocess.run(["umount", str(mount)], capture_output=True, timeout=20)
        remove_work(work)
