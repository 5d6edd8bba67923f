"""The real agent against a TLS-only mosquitto: CA and client certificate made here with openssl, a password from a
file; a wrong CA is refused with a clear error. No wristbands are needed: MQTT does not wait for Bluetooth."""
import os
import subprocess

import pytest

from agent_rig import free_port, stop, wait_until
from conftest import bin_dir


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture
def pki(tmp_path):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, plus an unrelated CA."""
    for name in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=tmp_path)
    (tmp_path / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, extra in (("server", ["-extfile", "san.ext"]), ("client", [])):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
                "-out", f"{name}.csr", cwd=tmp_path)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-out", f"{name}.pem", *extra, cwd=tmp_path)
    return tmp_path


@pytest.fixture
def tls_broker(pki):
    port = free_port()
    subprocess.run(["mosquitto_passwd", "-b", "-c", str(pki / "passwd"), "edge", "s3cret"], check=True, timeout=30)
    (pki / "mosquitto.conf").write_text(
        f"listener {port} 127.0.0.1\npersistence false\nallow_anonymous false\npassword_file {pki / 'passwd'}\n"
        f"cafile {pki / 'ca.pem'}\ncertfile {pki / 'server.pem'}\nkeyfile {pki / 'server.key'}\n"
        "require_certificate true\n"
        # As root, mosquitto drops to user `mosquitto`, who cannot read the test's private directory.
        + ("user root\n" if os.geteuid() == 0 else ""))
    log = open(pki / "mosquitto.log", "w")
    broker = subprocess.Popen(["mosquitto", "-c", str(pki / "mosquitto.conf")], stdout=log, stderr=log)
    try:
        yield port
    finally:
        stop(broker)


def start_agent(pki, port, ca):
    (pki / "password").write_text("s3cret\n")
    config = pki / f"agent-{ca}.toml"
    config.write_text(
        f'[agent]\nid = "tls"\ncontrol_socket = "{pki}/control-{ca}.sock"\n'
        f'[mqtt]\nhost = "127.0.0.1"\nport = {port}\nusername = "edge"\npassword_file = "password"\n'
        f'tls.ca_file = "{ca}.pem"\ntls.cert_file = "client.pem"\ntls.key_file = "client.key"\n'
        f'[spool]\ndir = "{pki}/spool-{ca}"\n')
    log = open(pki / f"agent-{ca}.log", "w")
    env = {"PATH": "/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={pki}/no-bus"}
    agent = subprocess.Popen([str(bin_dir() / "empalinkd"), "--config", str(config)], stdout=log, stderr=log, env=env)
    return agent, pki / f"agent-{ca}.log"


def retained_status(pki, port):
    result = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-u", "edge", "-P", "s3cret",
                             "--cafile", str(pki / "ca.pem"), "--cert", str(pki / "client.pem"),
                             "--key", str(pki / "client.key"), "-t", "empalink/tls/status", "-C", "1", "-W", "3"],
                            capture_output=True, text=True, timeout=10)
    return result.stdout.strip()


def test_agent_connects_over_tls_with_client_certificate_and_password_file(pki, tls_broker):
    agent, log = start_agent(pki, tls_broker, "ca")
    try:
        assert wait_until(lambda: '"state":"online"' in retained_status(pki, tls_broker), timeout=20), \
            log.read_text()
    finally:
        stop(agent)
    assert agent.returncode == 0
    assert '"state":"offline"' in retained_status(pki, tls_broker)


def test_a_broker_signed_by_another_ca_is_refused_with_a_clear_error(pki, tls_broker):
    agent, log = start_agent(pki, tls_broker, "other-ca")
    try:
        assert wait_until(lambda: "certificate verify failed" in log.read_text(), timeout=20), log.read_text()
        assert agent.poll() is None, "a refused broker is retried, not fatal"
    finally:
        stop(agent)
    line = next(l for l in log.read_text().splitlines() if "certificate verify failed" in l)
    assert line.startswith("warn: MQTT 127.0.0.1:") and len(line) < 200
    assert retained_status(pki, tls_broker) == ""
