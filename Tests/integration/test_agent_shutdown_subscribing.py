"""The agent stops (SIGTERM) while its subscriptions are still being answered — as when systemd restarts it while a
wristband reconnects. Leaving the bus with an `AcquireNotify` unanswered makes Debian 12's bluetoothd 5.66 use
memory it has freed (bluez/bluez#1784): it crashed so in our VM. The simulator answers `AcquireNotify` after
``ACQUIRE_MS`` (`[bluetoothd] acquire_notify_ms`, the CCC write's round trip) and counts the clients that leave the
bus with one unanswered (`left_while_subscribing`). The agent must wait for the answers, close what they hand it,
and still exit 0 within the 5 s a stop is given (SPEC §11).
"""
import time

from agent_rig import SCENARIO, Rig, wait_until

ACQUIRE_MS = 1500


def test_sigterm_while_subscribing_waits_for_bluez():
    scenario = SCENARIO + f"\n[bluetoothd]\nacquire_notify_ms = {ACQUIRE_MS}\n"
    with Rig(devices=1, seed=5, scenario=scenario) as rig:
        rig.start_agent(rig.config_text([1], mqtt_commands=False))
        pending = wait_until(lambda: rig.sim_stats().get("subscribing", 0) > 0, timeout=20, interval=0.02)
        assert pending, "the agent never subscribed: " + rig.agent_log_text()[-2000:]
        began = time.monotonic()
        rig.agent.terminate()
        code = rig.agent.wait(timeout=10)
        took = time.monotonic() - began
        stats = rig.sim_stats()
        log = rig.agent_log_text()
    assert code == 0, log[-2000:]
    assert took < 5, f"the agent took {took:.1f} s to stop"
    assert stats.get("left_while_subscribing") == 0, (stats.get("left_while_subscribing"), log[-2000:])
    # It did wait: the answers take ACQUIRE_MS from the calls, which came before the SIGTERM.
    assert stats.get("subscribing") == 0, stats
    print(f"agent stopped {took:.2f} s after SIGTERM, with every AcquireNotify answered")
