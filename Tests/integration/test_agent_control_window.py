"""Issue 23, item 4: control-plane messages and a full in-flight window.

With `mqtt.max_inflight = 1` and the broker's acknowledgements held back by a TCP relay (the broker is the real
mosquitto; the relay only delays its bytes to the agent), a retained status published while the window is full is
not lost: the broker ends up with the latest state. A flood of commands gets every result, or a counted drop.
"""
import json
import select
import signal
import socket
import threading
import time

import pytest

from agent_rig import Rig, free_port, wait_until

FLOOD = 300


class HoldingRelay:
    """A loopback TCP relay to the broker that can hold back the broker's bytes to the client (PUBACKs)."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.port = free_port()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", self.port))
        self.listener.listen(4)
        self.held = threading.Event()
        self.running = True
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        self.listener.settimeout(0.2)
        while self.running:
            try:
                client, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            thread = threading.Thread(target=self._pump, args=(client, upstream), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _pump(self, client, upstream):
        backlog = b""
        try:
            while self.running:
                readable, _, _ = select.select([client, upstream], [], [], 0.05)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        upstream.sendall(data)
                    else:
                        backlog += data
                if backlog and not self.held.is_set():
                    client.sendall(backlog)
                    backlog = b""
        except OSError:
            return
        finally:
            client.close()
            upstream.close()

    def close(self):
        self.running = False
        self.listener.close()
        for thread in self.threads:
            thread.join(timeout=2)


def statuses(rig, since):
    return [m.json.get("mode") for m in rig.subscriber.all(rig.topic("status")) if m.arrival >= since]


@pytest.fixture(scope="module")
def run():
    record = {}
    with Rig(devices=1) as rig:
        relay = HoldingRelay(rig.port)
        try:
            text = rig.config_text([], metrics_interval_s=0).replace(f"port = {rig.port}", f"port = {relay.port}")
            text = text.replace('qos = 1\n', 'qos = 1\nmax_inflight = 1\n')
            rig.start_agent(text)

            def window_empty():
                status = rig.ctl("status", "--socket", str(rig.control_socket))
                return status.returncode == 0 and json.loads(status.stdout)["metrics"]["mqtt"]["inflight"] == 0
            # The start-up publishes are acknowledged: the one slot is free before the relay holds PUBACKs.
            assert wait_until(window_empty, 10), rig.agent_log_text()

            relay.held.set()
            start = time.monotonic()
            rig.agent.send_signal(signal.SIGUSR1)  # status "background": takes the only slot, its PUBACK held
            record["first_through"] = wait_until(lambda: "background" in statuses(rig, start), 5) is not None
            rig.agent.send_signal(signal.SIGUSR2)  # status "active": the window is full
            time.sleep(0.5)
            record["while_held"] = statuses(rig, start)
            relay.held.clear()
            record["final_published"] = wait_until(lambda: statuses(rig, start)[-1:] == ["active"], 5) is not None
            retained = rig.retained(rig.topic("status"))
            record["retained"] = [m.json for m in retained]

            result_topic = rig.topic("cmd", "result")
            before = len(rig.subscriber.all(result_topic))
            for _ in range(FLOOD):
                rig.subscriber.client.publish(rig.topic("cmd"), json.dumps({"mode": "resume"}), qos=1)

            def settled():
                count = len(rig.subscriber.all(result_topic))
                time.sleep(1.0)
                return count == len(rig.subscriber.all(result_topic)) and count > before
            wait_until(settled, 30)
            record["results"] = len(rig.subscriber.all(result_topic)) - before
            status = rig.ctl("status", "--socket", str(rig.control_socket))
            record["status"] = json.loads(status.stdout) if status.returncode == 0 else status.stderr
            record["log"] = rig.agent_log_text()
        finally:
            relay.close()
    return record


def test_retained_status_published_while_the_window_is_full_reaches_the_broker(run):
    assert run["first_through"], run["log"][-2000:]
    assert run["while_held"] == ["background"], run["while_held"]
    assert run["final_published"], f"the status published into a full window was lost: {run['log'][-2000:]}"
    assert [status.get("mode") for status in run["retained"]] == ["active"], run["retained"]


def test_every_command_gets_a_result_or_a_counted_drop(run):
    mqtt = run["status"]["metrics"]["mqtt"]
    assert run["results"] + mqtt["control_dropped"] == FLOOD, (run["results"], mqtt)
    assert mqtt["control_waiting"] == 0, mqtt
