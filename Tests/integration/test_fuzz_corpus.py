"""The fuzz corpora as regression inputs (issue #21, Fuzz/README.md): every committed input of every target, the
seeds and the inputs that once crashed a parser, replayed by the normal build's `empalink-fuzz` (no sanitizers,
so it also runs where the fuzzing build does not). A parser that traps again on one of them fails here."""
import pathlib

import pytest

from conftest import ROOT, bin_dir, run

CORPUS = ROOT / "Fuzz" / "corpus"


def targets():
    return sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def test_every_target_has_a_corpus():
    listed = run([str(bin_dir() / "empalink-fuzz"), "list"])
    assert listed.returncode == 0, listed.stderr
    names = sorted(line.split("\t")[0] for line in listed.stdout.splitlines())
    assert names == targets()


@pytest.mark.parametrize("target", targets())
def test_corpus_replays_without_a_crash(target):
    directories = [CORPUS / target]
    if target == "config":
        directories += [ROOT / "Config", ROOT / "Tests/integration/toml/valid", ROOT / "Tests/integration/toml/invalid"]
    result = run([str(bin_dir() / "empalink-fuzz"), target, *map(str, directories)], timeout=120)
    assert result.returncode == 0, f"{target}: exit {result.returncode}\n{result.stderr[-2000:]}"
    expected = sum(1 for d in directories for p in pathlib.Path(d).iterdir() if not p.name.startswith("."))
    assert result.stdout.strip() == f"{target}: {expected} inputs replayed, none crashed"
