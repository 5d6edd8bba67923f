"""Issue 23, the control socket and `empalinkctl` against a running agent: a client's 5 s timer never closes a later
client on the same descriptor; a second agent on the same socket leaves it alone; the socket's mode follows the umask
(the documented `UMask=0007` drop-in admits the group); `empalinkctl` says "agent busy" at the client limit and "no
reply within 5 s" against an agent that never answers; `capture` refuses a wristband the agent streams.
"""
import json
import os
import socket
import stat
import subprocess
import time

import pytest

from agent_rig import DIE_WITH_PARENT, AGENT, Rig, address, stop, wait_until
from conftest import run


@pytest.fixture(scope="module")
def rig():
    """One agent streaming wristband 1, started under the documented drop-in's `UMask=0007`."""
    with Rig(devices=2) as rig:
        previous = os.umask(0o007)
        try:
            rig.start_agent(rig.config_text(whitelist=[1]))
        finally:
            os.umask(previous)
        if not rig.wait_connected(1):
            raise RuntimeError(f"wristband 1 did not connect: {rig.agent_log_text()}")
        yield rig


def request(path, line=b"status\n", timeout=10):
    """One control request over a fresh connection; the reply bytes (b'' when the agent closed without one)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        client.connect(str(path))
        client.sendall(line)
        return client.recv(1 << 20)


def test_a_served_clients_timer_does_not_close_a_later_client_on_its_descriptor(rig):
    # The first client is served at once; its 5 s timer used to fire anyway and close whatever client then held
    # the same descriptor number.
    start = time.monotonic()
    assert json.loads(request(rig.control_socket))["agent"] == AGENT
    time.sleep(max(0.0, start + 4.5 - time.monotonic()))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as late:
        late.settimeout(10)
        late.connect(str(rig.control_socket))
        time.sleep(max(0.0, start + 5.5 - time.monotonic()))
        try:
            late.sendall(b"status\n")
            reply = late.recv(1 << 20)
        except OSError as error:
            pytest.fail(f"the later client was closed by the earlier one's timer: {error}")
    assert reply, "the later client was closed by the earlier one's timer"
    assert json.loads(reply)["agent"] == AGENT


def test_socket_mode_follows_the_umask_and_the_group_can_connect(rig):
    mode = stat.S_IMODE(os.lstat(rig.control_socket).st_mode)
    assert mode == 0o660, oct(mode)
    # The documented recipe: a member of the agent's group (here gid 0, as uid nobody) runs `empalinkctl status`.
    os.chmod(rig.tmp, 0o711)
    result = run(["setpriv", "--reuid=65534", "--regid=0", "--clear-groups",
                  str(rig.bin / "empalinkctl"), "status", "--socket", str(rig.control_socket)], timeout=20)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["agent"] == AGENT
    # Others never: a user outside the group is refused.
    other = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                 str(rig.bin / "empalinkctl"), "status", "--socket", str(rig.control_socket)], timeout=20)
    assert other.returncode == 1
    assert "Permission denied" in other.stderr


def test_ctl_at_the_agents_client_limit_says_agent_busy(rig):
    held = []
    try:
        for _ in range(16):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(rig.control_socket))
            held.append(client)
        # The agent accepts all 16 (their timers run 5 s); the 17th is closed at once.
        time.sleep(0.3)
        result = rig.ctl("status", "--socket", str(rig.control_socket))
    finally:
        for client in held:
            client.close()
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stderr.strip().splitlines()[-1].startswith("status: error: agent busy:"), result.stderr
    # And the agent serves again once they are gone.
    assert wait_until(lambda: rig.ctl("status", "--socket", str(rig.control_socket)).returncode == 0, 5)


def test_ctl_against_an_agent_that_never_answers_says_no_reply(tmp_path, binaries):
    path = tmp_path / "silent.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.bind(str(path))
        silent.listen(8)
        start = time.monotonic()
        result = run([str(binaries / "empalinkctl"), "status", "--socket", str(path)], timeout=20)
        elapsed = time.monotonic() - start
    assert result.returncode == 1
    assert result.stderr.strip() == f"status: error: no reply within 5 s from the agent at {path}"
    assert 4.5 <= elapsed < 10


def second_agent(rig, name, socket_path=None):
    """Starts another empalinkd on the rig's bus: its own id, spool and MQTT identity; the rig's control socket
    unless `socket_path` is given. Returns the process and its log's path."""
    config = rig.tmp / f"{name}.toml"
    text = rig.config_text(whitelist=[]).replace(f'id = "{AGENT}"', f'id = "{name}"')
    text = text.replace(str(rig.tmp / "spool"), str(rig.tmp / f"spool-{name}"))
    if socket_path is not None:
        text = text.replace(str(rig.control_socket), str(socket_path))
    config.write_text(text)
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.bus_address)
    env.pop("NOTIFY_SOCKET", None)
    log_path = rig.tmp / f"{name}.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(DIE_WITH_PARENT + [str(rig.bin / "empalinkd"), "--config", str(config)],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    return process, log_path


def test_a_second_agent_on_the_same_control_socket_is_refused_and_leaves_it_alone(rig):
    second, log_path = second_agent(rig, "second")
    try:
        # The instance lock beside the socket refuses it before it touches anything.
        assert wait_until(lambda: second.poll() is not None, 20), log_path.read_text()
        assert second.returncode != 0
        assert "another empalinkd is running" in log_path.read_text(), log_path.read_text()
    finally:
        stop(second)
    status = rig.ctl("status", "--socket", str(rig.control_socket))
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["agent"] == AGENT, "the second agent took over the control socket"


def test_an_answering_socket_at_control_socket_is_never_unlinked(rig):
    # Some program serves a socket where the configuration puts the agent's (the instance lock beside it is free):
    # the agent must leave it alone, and say so.
    path = rig.tmp / "taken.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(4)
        inode = path.stat().st_ino
        other, log_path = second_agent(rig, "other", socket_path=path)
        try:
            assert wait_until(lambda: "is in use by a running agent" in log_path.read_text()
                              or other.poll() is not None, 20), log_path.read_text()
            assert "is in use by a running agent" in log_path.read_text(), log_path.read_text()
        finally:
            stop(other)
        # Neither replaced while it ran nor unlinked at its exit.
        assert path.stat().st_ino == inode
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            client.connect(str(path))


def test_capture_refuses_a_wristband_the_agent_streams(rig):
    status_topic = rig.topic("a00101", "status")
    before = len(rig.subscriber.all(status_topic))
    result = run([str(rig.bin / "empalinkctl"), "capture", "--address", address(1), "--out",
                  str(rig.tmp / "held.cap"), "--seconds", "2", "--config", str(rig.config_path)],
                 env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.bus_address), timeout=30)
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"capture: error: {address(1)} is already connected (empalinkd streams it"), result.stderr
    assert not (rig.tmp / "held.cap").exists()
    # The agent's link is untouched: no status change for the wristband, and it is still connected.
    time.sleep(1.0)
    assert [m.json["status"] for m in rig.subscriber.all(status_topic)[before:]] == []
    assert rig.device_status(1)["status"] == "connected"
