"""Shared fixtures for the integration tests: they run the real binaries from the build directory."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def bin_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("EMPALINK_BIN", ROOT / ".build" / "debug"))


@pytest.fixture(scope="session")
def binaries() -> pathlib.Path:
    path = bin_dir()
    for name in ("empalinkd", "empalinkctl"):
        if not (path / name).exists():
            pytest.fail(f"{path / name} is missing: run `make build` first (or set EMPALINK_BIN)")
    return path


def run(args, *, input=None, timeout=60, **kwargs):
    """Runs a command and returns the CompletedProcess (text mode)."""
    return subprocess.run(args, input=input, capture_output=True, text=True, timeout=timeout, **kwargs)
