"""Our TOML parser against Python's tomllib, through `empalinkctl toml-decode` (the toml-test decoder interface).

Valid corpus (toml/valid/*.toml): our decoding must equal tomllib's, both in toml-test's JSON shape
(`{"type": ..., "value": ...}` leaves, floats compared as numbers, nan == nan).
Invalid corpus (toml/invalid/*.toml, one error each): both must reject; ours exits 1 with exactly one stderr line
`toml-decode: LINE:COL: MESSAGE` whose position lies inside the document.
By design we also reject what tomllib accepts: date/time values and integers beyond 64 bits.
"""

import json
import math
import os
import pathlib
import re
import subprocess
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = pathlib.Path(__file__).resolve().parent / "toml"
BIN = pathlib.Path(os.environ.get("EMPALINK_BIN", ROOT / ".build" / "debug"))
CTL = BIN / "empalinkctl"

VALID = sorted((CORPUS / "valid").glob("*.toml"))
INVALID = sorted((CORPUS / "invalid").glob("*.toml"))
ERROR_LINE = re.compile(r"^toml-decode: (\d+):(\d+): (\S.*)$")
DATETIME_MESSAGE = "date/time values are not supported in this configuration; quote the value as a string"


def decode(data: bytes) -> subprocess.CompletedProcess:
    if not CTL.exists():
        pytest.fail(f"{CTL} not found: run `swift build` first (or set EMPALINK_BIN)")
    return subprocess.run([str(CTL), "toml-decode"], input=data, capture_output=True, timeout=30)


def python_decode(data: bytes):
    """tomllib on the document; a leading byte order mark is allowed (tomllib itself does not skip it)."""
    return tomllib.loads(data.decode("utf-8-sig"))


def to_toml_test(value):
    """tomllib's Python values in the toml-test decoder shape that `toml-decode` writes."""
    if isinstance(value, dict):
        return {key: to_toml_test(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_toml_test(item) for item in value]
    if isinstance(value, bool):  # before int: bool is an int subclass
        return {"type": "bool", "value": "true" if value else "false"}
    if isinstance(value, int):
        return {"type": "integer", "value": str(value)}
    if isinstance(value, float):
        if math.isnan(value):
            text = "nan"
        elif math.isinf(value):
            text = "inf" if value > 0 else "-inf"
        else:
            text = repr(value)
        return {"type": "float", "value": text}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    raise AssertionError(f"unexpected value from tomllib: {value!r}")


def assert_same(ours, theirs, path="$"):
    """Structural equality; floats compare as numbers (nan == nan, and the sign of zero must match)."""
    if isinstance(theirs, dict) and set(theirs) == {"type", "value"} and isinstance(theirs.get("type"), str):
        assert isinstance(ours, dict) and ours.get("type") == theirs["type"], f"{path}: {ours!r} != {theirs!r}"
        if theirs["type"] == "float":
            a, b = float(ours["value"]), float(theirs["value"])
            assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b)), (
                f"{path}: float {ours['value']} != {theirs['value']}"
            )
        else:
            assert ours["value"] == theirs["value"], f"{path}: {ours['value']!r} != {theirs['value']!r}"
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{path}: expected a table, got {ours!r}"
        assert list(ours) == list(theirs) or set(ours) == set(theirs), f"{path}: keys {list(ours)} != {list(theirs)}"
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{path}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), f"{path}: {ours!r} != {theirs!r}"
        for index, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{path}[{index}]")
    else:
        raise AssertionError(f"{path}: unexpected {theirs!r}")


def assert_one_error_line(result: subprocess.CompletedProcess, data: bytes) -> tuple[int, int, str]:
    assert result.returncode == 1, f"exit {result.returncode}, stdout {result.stdout[:200]!r}"
    assert result.stdout == b""
    lines = result.stderr.decode("utf-8").splitlines()
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    match = ERROR_LINE.match(lines[0])
    assert match, f"not 'toml-decode: LINE:COL: MESSAGE': {lines[0]!r}"
    line, column = int(match.group(1)), int(match.group(2))
    assert 1 <= line <= data.count(b"\n") + 1 and column >= 1, lines[0]
    return line, column, match.group(3)


def test_corpus_is_large_enough():
    assert len(VALID) >= 40, VALID
    assert len(INVALID) >= 60, INVALID


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_document_decodes_like_tomllib(path):
    data = path.read_bytes()
    expected = to_toml_test(python_decode(data))
    result = decode(data)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""
    assert_same(json.loads(result.stdout), expected)


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_document_with_crlf_line_endings_decodes_the_same(path):
    data = path.read_bytes()
    if b"\r" in data:
        pytest.skip("already has CRLF line endings")
    lf = decode(data)
    crlf = decode(data.replace(b"\n", b"\r\n"))
    assert crlf.returncode == 0, crlf.stderr.decode()
    assert json.loads(crlf.stdout) == json.loads(lf.stdout)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_document_is_rejected_by_both(path):
    data = path.read_bytes()
    with pytest.raises((tomllib.TOMLDecodeError, UnicodeDecodeError)):
        python_decode(data)
    assert_one_error_line(decode(data), data)


@pytest.mark.parametrize(
    "document, position",
    [
        (b"odt = 1979-05-27T07:32:00Z\n", (1, 7)),
        (b"odt = 1979-05-27 07:32:00-08:00\n", (1, 7)),
        (b"ldt = 1979-05-27T00:32:00.999999\n", (1, 7)),
        (b"ld = 1979-05-27\n", (1, 6)),
        (b"lt = 07:32:00\n", (1, 6)),
        (b"a = 1\n[t]\nwhen = [1, 1979-05-27]\n", (3, 12)),
        (b"t = { at = 00:00:00 }\n", (1, 12)),
    ],
    ids=["offset-datetime", "offset-datetime-space", "local-datetime", "local-date", "local-time", "in-array",
         "in-inline-table"],
)
def test_date_time_values_are_rejected_by_design(document, position):
    python_decode(document)  # valid TOML: tomllib accepts it
    line, column, message = assert_one_error_line(decode(document), document)
    assert (line, column) == position
    assert message == DATETIME_MESSAGE


@pytest.mark.parametrize(
    "document, text",
    [
        (b"i = 9223372036854775808\n", "9223372036854775808"),
        (b"i = -9223372036854775809\n", "-9223372036854775809"),
        (b"i = 0x8000000000000000\n", "0x8000000000000000"),
        (b"i = 0b1_0000000000000000000000000000000000000000000000000000000000000000\n",
         "0b1_0000000000000000000000000000000000000000000000000000000000000000"),
    ],
    ids=["decimal", "negative", "hex", "binary"],
)
def test_integers_beyond_64_bits_are_rejected(document, text):
    python_decode(document)  # tomllib has arbitrary-precision integers
    line, column, message = assert_one_error_line(decode(document), document)
    assert (line, column) == (1, 5)
    assert message == f"integer {text} does not fit in 64 bits"


def test_megabyte_document_decodes_like_tomllib():
    parts = []
    for section in range(2500):
        parts.append(f'[[item]]\nid = {section}\nname = "item \\u00e9 {section}"\nratio = {section / 7!r}\n')
        parts.append(f"tags = [{', '.join(repr(str(i)) for i in range(12))}]\n")
        parts.append(f"sub.flag = {'true' if section % 2 else 'false'}\nsub.hex = 0x{section:x}\n")
        parts.append(f"text = '''\n{'lorem ipsum ' * 20}\n'''\n")
    data = "".join(parts).encode()
    assert len(data) >= 1_000_000
    result = decode(data)
    assert result.returncode == 0, result.stderr.decode()
    assert_same(json.loads(result.stdout), to_toml_test(python_decode(data)))


SIGNIFICANT = [b"[", b"]", b"=", b'"', b"'", b"\\", b".", b",", b"{", b"}", b"#", b"\n", b"\r", b"\t", b" ", b"_",
               b"+", b"-", b"e", b"0", b'"""', b"'''", b"[[", b"]]", b"\\u", b"inf", b"nan", b"true", b"a", b"x.y"]


def mutate(data: bytes, rng) -> bytes:
    """One to three random edits: byte replacement, insertion of a TOML-significant token, deletion, line copy
    or swap."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(out))
        op = rng.randrange(6)
        if op == 0 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif op in (1, 2):
            out[at:at] = rng.choice(SIGNIFICANT)
        elif op == 3 and out:
            del out[at:at + rng.randint(1, 3)]
        elif op == 4:
            lines = out.split(b"\n")
            out = bytearray(b"\n".join(lines + [rng.choice(lines)]))
        else:
            lines = out.split(b"\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            out = bytearray(b"\n".join(lines))
    return bytes(out)


def test_mutated_documents_agree_with_tomllib():
    """Differential check: 1500 mutated corpus documents (fixed seed) are accepted or rejected exactly when tomllib
    accepts or rejects them (except by-design refusals), and accepted ones decode to the same values."""
    import random

    rng = random.Random(20240601)
    seeds = [path.read_bytes() for path in VALID if path.stat().st_size < 4096]
    disagreements = []
    for _ in range(1500):
        data = mutate(rng.choice(seeds), rng)
        try:
            expected = to_toml_test(python_decode(data))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            expected = None
        result = decode(data)
        if expected is None:
            if result.returncode != 1:
                disagreements.append(f"tomllib rejects, we accept: {data!r}")
            continue
        if result.returncode != 0:
            message = result.stderr.decode()
            if DATETIME_MESSAGE not in message and "does not fit in 64 bits" not in message:
                disagreements.append(f"tomllib accepts, we reject ({message.strip()}): {data!r}")
            continue
        try:
            assert_same(json.loads(result.stdout), expected)
        except AssertionError as error:
            disagreements.append(f"values differ ({error}): {data!r}")
    assert disagreements == [], "\n".join(disagreements[:10])
