"""Docs/mqtt.md: every JSON example parses, sits on a SPEC §10 topic and carries the fields SPEC §10 names.

Examples are fenced blocks whose info string is `json topic=<topic> [retained]`. The end-to-end test compares
live payloads with the same shapes (`check_payload` is the one place that knows them).
"""
import json
import math
import re

import pytest

from conftest import ROOT

DOC = ROOT / "Docs" / "mqtt.md"
FENCE = re.compile(r"^```json(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)
SERIAL = re.compile(r"^[0-9a-f]{6}$")
ADDRESS = re.compile(r"^([0-9A-F]{2}:){5}[0-9A-F]{2}$")

SAMPLED = {"bvp": 64, "gsr": 4, "temp": 4, "acc": 32}
EVENTS = {"ibi", "hr", "battery", "contact"}
RETAINED = {"status", "devices", "device-status"}
EVERY_KIND = {"status", "devices", "device-status", "metrics", "cmd", "cmd/result", "tag", *SAMPLED, *EVENTS}


def examples():
    """(info string, topic, retained, parsed payload) for every ```json block in the document."""
    text = DOC.read_text()
    found = []
    for match in FENCE.finditer(text):
        words = match["info"].split()
        topics = [w.split("=", 1)[1] for w in words if w.startswith("topic=")]
        assert topics, f"a json example has no topic= in its info string: {match['info']!r}"
        payload = json.loads(match["body"])
        found.append((match["info"].strip(), topics[0], "retained" in words, payload))
    return found


def kind_of(topic, prefix="empalink"):
    """The SPEC §10 kind of `topic` (prefix/agent/...), or a failure naming the topic."""
    assert topic.startswith(prefix + "/"), topic
    levels = topic[len(prefix) + 1:].split("/")
    agent, rest = levels[0], levels[1:]
    assert agent and "+" not in agent and "#" not in agent, topic
    if rest in (["status"], ["devices"], ["metrics"], ["cmd"], ["cmd", "result"]):
        return "/".join(rest)
    assert len(rest) == 2 and SERIAL.match(rest[0]), f"not a SPEC §10 topic: {topic}"
    if rest[1] == "status":
        return "device-status"
    assert rest[1] in SAMPLED or rest[1] in EVENTS or rest[1] == "tag", f"unknown stream in {topic}"
    return rest[1]


def is_time(value):
    # After 2020 and finite: the doc's examples use real epoch seconds, as the agent does once the clock is synced.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and value > 1_577_836_800


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_session(payload):
    assert isinstance(payload.get("sid"), str) and payload["sid"], payload
    assert isinstance(payload.get("seq"), int) and not isinstance(payload["seq"], bool) and payload["seq"] >= 0


def check_payload(kind, payload):
    """Asserts that `payload` has the shape SPEC §10 gives messages of `kind`."""
    assert isinstance(payload, dict), payload
    if kind == "status":
        assert payload.get("state") in ("online", "offline"), payload
        if payload["state"] == "online":
            assert isinstance(payload.get("version"), str) and payload["version"]
            assert payload.get("mode") in ("active", "background")
            assert isinstance(payload.get("clock_synced"), bool)
        else:
            assert payload == {"state": "offline"}
    elif kind == "devices":
        assert payload, "the devices example should show at least one wristband"
        for serial, device in payload.items():
            assert SERIAL.match(serial), serial
            assert set(device) >= {"address", "name", "rssi", "allowed"}, device
            assert ADDRESS.match(device["address"]) and device["address"].replace(":", "")[-6:].lower() == serial
            assert isinstance(device["name"], str) and isinstance(device["allowed"], bool)
            assert isinstance(device["rssi"], int) and -127 <= device["rssi"] <= 20
    elif kind == "device-status":
        assert set(payload) >= {"status", "address", "label", "rssi", "battery", "since"}, payload
        assert payload["status"] in ("connected", "connecting", "disconnecting", "disconnected")
        assert ADDRESS.match(payload["address"]) and isinstance(payload["label"], str)
        assert payload["battery"] is None or 0.0 <= payload["battery"] <= 1.0
        assert is_time(payload["since"])
        # bluetoothd does not refresh RSSI over a connection: the agent reports none rather than a stale one.
        assert payload["rssi"] is None if payload["status"] == "connected" else True, payload
    elif kind in SAMPLED:
        check_session(payload)
        assert set(payload) == {"sid", "seq", "t", "fs", "v"}, payload
        assert is_time(payload["t"]) and payload["fs"] == SAMPLED[kind]
        assert isinstance(payload["v"], list) and payload["v"]
        if kind == "acc":
            for sample in payload["v"]:
                assert isinstance(sample, list) and len(sample) == 3, sample
                assert all(isinstance(a, int) and -128 <= a <= 127 for a in sample), sample
        else:
            assert all(is_number(x) for x in payload["v"]), payload["v"]
    elif kind in EVENTS:
        check_session(payload)
        if kind == "hr":
            # SPEC §10 `[[t,bpm],…]`, plus the message's source and a confidence per value (issue #18).
            assert set(payload) == {"sid", "seq", "source", "v", "confidence"}, payload
            assert payload["source"] in ("beats", "spectral", "device"), payload
            assert isinstance(payload["confidence"], list) and len(payload["confidence"]) == len(payload["v"])
            assert all(is_number(c) and 0 <= c <= 1 for c in payload["confidence"]), payload
        else:
            assert set(payload) == {"sid", "seq", "v"}, payload
        assert isinstance(payload["v"], list) and payload["v"]
        for pair in payload["v"]:
            assert isinstance(pair, list) and len(pair) == 2 and is_time(pair[0]) and is_number(pair[1]), pair
            if kind == "battery":
                assert 0.0 <= pair[1] <= 1.0
            if kind == "ibi":
                assert 0.2 <= pair[1] <= 2.0, "an IBI is in seconds"
            if kind == "hr":
                assert 25 <= pair[1] <= 250, "heart rate is in bpm"
    elif kind == "tag":
        check_session(payload)
        assert set(payload) == {"sid", "seq", "v"}, payload
        assert payload["v"] and all(is_time(t) for t in payload["v"])
    elif kind == "metrics":
        assert is_number(payload.get("uptime_s")) and payload.get("mode") in ("active", "background")
        assert isinstance(payload.get("clock_synced"), bool)
        for serial, device in payload["devices"].items():
            assert SERIAL.match(serial)
            assert set(device) >= {"rx_packets", "lost", "decode_errors", "reconnects", "rssi"}, device
            assert device["rssi"] is None if device.get("status") == "connected" else True, device
        assert set(payload["mqtt"]) >= {"published", "acked", "inflight"}
        assert set(payload["spool"]) >= {"bytes", "records", "dropped", "oldest_t"}
    elif kind == "cmd":
        assert len(payload) == 1, "a command has exactly one key"
        (key, value), = payload.items()
        assert (key == "mode" and value in ("background", "resume")) or (key == "rescan" and value is True)
    elif kind == "cmd/result":
        assert isinstance(payload.get("ok"), bool)
        assert ("error" in payload) != payload["ok"], "an error result names the error, a success has none"
    else:
        pytest.fail(f"no check for kind {kind}")


ALL = examples()


def test_document_has_examples_for_every_topic_kind():
    kinds = {kind_of(topic) for _, topic, _, _ in ALL}
    assert kinds == EVERY_KIND, f"missing: {EVERY_KIND - kinds}, unexpected: {kinds - EVERY_KIND}"


@pytest.mark.parametrize("info,topic,retained,payload", ALL, ids=[f"{i}:{t}" for i, (_, t, _, _) in enumerate(ALL)])
def test_example_matches_spec(info, topic, retained, payload):
    kind = kind_of(topic)
    check_payload(kind, payload)
    assert retained == (kind in RETAINED), f"{topic}: SPEC §10 retains exactly status, devices and S/status"


def test_examples_share_one_session_per_device():
    # One connection session in the examples: the same sid on every stream of a device, as the agent does.
    sids = {payload["sid"] for _, _, _, payload in ALL if "sid" in payload}
    assert len(sids) == 1, sids


def test_sampled_examples_fit_the_default_batch():
    # batch_ms = 250: at most one batch's worth of samples, rounded up, per message.
    for _, topic, _, payload in ALL:
        kind = kind_of(topic)
        if kind in SAMPLED:
            assert len(payload["v"]) <= math.ceil(SAMPLED[kind] * 0.25), (topic, len(payload["v"]))


def test_checker_rejects_what_spec_forbids():
    # The checks can fail: a sampled message without fs, an ACC axis out of int8, a result both ok and failed.
    with pytest.raises(AssertionError):
        check_payload("bvp", {"sid": "x", "seq": 0, "t": 1764426103.0, "v": [1.0]})
    with pytest.raises(AssertionError):
        check_payload("acc", {"sid": "x", "seq": 0, "t": 1764426103.0, "fs": 32, "v": [[0, 0, 300]]})
    with pytest.raises(AssertionError):
        check_payload("cmd/result", {"ok": True, "error": "x"})
    with pytest.raises(AssertionError):
        check_payload("hr", {"sid": "x", "seq": 0, "v": [[1764426103.0, 72.4]]})
    with pytest.raises(AssertionError):
        check_payload("hr", {"sid": "x", "seq": 0, "source": "beats", "v": [[1764426103.0, 72.4]],
                             "confidence": [1, 1]})
    with pytest.raises(AssertionError):
        kind_of("empalink/ward3-pi/9FF167/bvp")
