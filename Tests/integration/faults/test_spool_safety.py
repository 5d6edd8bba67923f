"""Issue 23: the spool directory against an operator's mistakes and an attacker's afternoon, on the real agent.

- A symbolic link planted as a segment is skipped and reported at warning; its target is not emptied and the
  link is not deleted.
- A second empalinkd on the same configuration (or on the same spool.dir) refuses to start with one clear line,
  and the first keeps its control socket.
- A spool.dir that is a file is reported as such, not as "File exists".

The agents here have no Bluetooth (no bus, no API key) and no broker: what is tested happens before either.
"""
import os
import pathlib
import time

from faultrig import Agent, Processes, bin_dir, free_port, make_work, remove_work, wait_until


def bare_agent(processes, work: pathlib.Path, **keys) -> Agent:
    work.mkdir(exist_ok=True)
    return Agent(processes, work, broker_port=free_port(), bus_address="unix:path=/nonexistent-bus", api_key=False,
                 **keys)


def log_lines(agent: Agent, needle: str):
    return [line for line in agent.log.read_text(errors="replace").splitlines() if needle in line]


def test_a_symlinked_segment_is_skipped_and_reported_at_warning_and_its_target_kept():
    work = make_work("elf-symlink-")
    processes = Processes()
    try:
        agent = bare_agent(processes, work / "agent")
        agent.spool_dir.mkdir(mode=0o700)
        victim = work / "victim"
        victim.write_bytes(b"an operator's file that a planted link points at\n" * 100)
        link = agent.spool_dir / "00000000000000000009.seg"
        link.symlink_to(victim)

        agent.start()
        agent.wait_status(timeout=20)
        assert agent.stop() == 0
        agent.assert_no_trap()

        assert victim.read_bytes() == b"an operator's file that a planted link points at\n" * 100, \
            "recovery emptied the link's target"
        assert link.is_symlink(), "recovery deleted the planted link"
        lines = log_lines(agent, f"spool {agent.spool_dir}:")
        assert len(lines) == 1, agent.tail()
        assert lines[0].startswith("warn: "), lines[0]
        assert "1 not regular files, left alone: 00000000000000000009.seg (symbolic link)" in lines[0], lines[0]
    finally:
        processes.stop_all()
        remove_work(work)


def wait_exit(process, timeout: float):
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return process.poll()


def test_a_second_agent_on_one_configuration_refuses_to_start_and_the_first_keeps_its_socket():
    work = make_work("elf-twice-")
    processes = Processes()
    try:
        first = bare_agent(processes, work / "first")
        first.start()
        first.wait_status(timeout=20)

        # The same configuration file: same control socket, same spool, same client id.
        log = work / "second.log"
        env = {key: value for key, value in os.environ.items() if key not in ("JOURNAL_STREAM", "NOTIFY_SOCKET")}
        env["DBUS_SYSTEM_BUS_ADDRESS"] = first.bus_address
        second = processes.start([bin_dir() / "empalinkd", "--config", first.config], log=log, env=env)
        code = wait_exit(second, 10)
        output = log.read_text(errors="replace")
        assert code == 1, f"the second empalinkd kept running (exit {code}):\n{output}"
        errors = [line for line in output.splitlines() if line.startswith("error: ")]
        assert errors == [f"error: another empalinkd is running with this configuration (it holds "
                          f"{first.control}.lock); stop it first, or give this one its own agent.control_socket "
                          f"and spool.dir"], output
        assert "spool" not in output.replace("spool.dir", ""), f"the second agent opened the spool:\n{output}"
        # The first's socket is still there and answering.
        assert first.control.is_socket()
        assert first.status() is not None, "the first agent lost its control socket"

        # Another configuration (own socket) on the same spool.dir: refused by the spool's lock.
        other = bare_agent(processes, work / "other", spool_dir=first.spool_dir)
        other.start()
        code = wait_exit(other.process, 10)
        output = other.log.read_text(errors="replace")
        assert code == 1, f"an agent shared a running agent's spool (exit {code}):\n{output}"
        assert f"error: spool directory {first.spool_dir} is in use by another process (is another empalinkd " \
               "running with this spool.dir?)" in output, output
        processes.running.remove(other.process)

        assert first.stop() == 0
        first.assert_no_trap()
        # Once the first has stopped, the lock is gone with it: the same configuration starts.
        first.start()
        first.wait_status(timeout=20)
        assert first.stop() == 0
    finally:
        processes.stop_all()
        remove_work(work)


def test_a_spool_dir_that_is_a_file_is_reported_as_one():
    work = make_work("elf-notdir-")
    processes = Processes()
    try:
        (work / "agent").mkdir()
        path = work / "agent" / "spool"
        path.write_bytes(b"not a directory")
        agent = bare_agent(processes, work / "agent", spool_dir=path)
        agent.start()
        agent.wait_status(timeout=20)
        assert agent.stop() == 0
        output = agent.log.read_text(errors="replace")
        assert "File exists" not in output, output
        assert f"spool directory path {path} is a regular file, not a directory" in output, output
        assert path.read_bytes() == b"not a directory"
    finally:
        processes.stop_all()
        remove_work(work)
