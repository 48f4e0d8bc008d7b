"""The faults wing's import rules (DESIGN.md §5), read from the imports, and its shared doubles.

* the crash-state judge is an oracle: from ``reference/`` it imports only ``reference.text``;
* ``harness/faults/`` reaches into ``reference/`` only through the ``Fs`` seam, the clock,
  ``Store`` and ``serve``;
* building the CLI (as every run does) imports neither the explorer nor the campaigns.
"""

from __future__ import annotations

import ast
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.faults.doubles import FaultFs
from reference.errors import NodeError

REPO = Path(__file__).resolve().parents[2]
FAULTS = REPO / "harness" / "faults"
FAULTS_MAY_USE = {"reference.fs", "reference.errors", "reference.clock", "reference.store", "reference.serve"}


def reference_imports(path: Path) -> set[str]:
    """The ``reference`` modules a file imports (absolute imports only: harness never uses
    relative imports into reference)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out |= {n for n in names if n == "reference" or n.startswith("reference.")}
    return out


@pytest.mark.parametrize("name", ["crash_judge.py", "spec.py", "grammar.py"])
def test_the_crash_judge_and_its_grammar_import_only_reference_text(name: str) -> None:
    assert reference_imports(REPO / "harness" / "oracles" / name) <= {"reference.text"}


@pytest.mark.parametrize("path", sorted(FAULTS.glob("*.py")), ids=lambda p: p.name)
def test_faults_reach_the_reference_only_through_its_seams(path: Path) -> None:
    assert reference_imports(path) <= FAULTS_MAY_USE


def _imported_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint('\\n'.join(sorted(m for m in sys.modules if m.startswith('harness'))))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_building_the_cli_imports_no_explorer_or_campaign() -> None:
    loaded = _imported_after("from harness.cli import main\nimport harness.faults, harness.faults.cases")
    assert not loaded & {"harness.faults.explorer", "harness.faults.campaigns", "harness.faults.memfs"}


def test_the_faults_package_imports_no_strace() -> None:
    assert "harness.faults.strace" not in _imported_after("import harness.faults")


# --- the shared doubles ----------------------------------------------------------------------


def test_mutating_calls_are_numbered_and_a_failing_close_releases_the_descriptor(tmp_path: Path) -> None:
    fs = FaultFs()
    target = str(tmp_path / "f")
    fs.fail(nth=3, err=errno.EIO, mutating=True)  # open(w), write, close
    fd = fs.open(target, os.O_WRONLY | os.O_CREAT, 0o644)
    fs.write(fd, b"x")
    with pytest.raises(NodeError):
        fs.close(fd)
    with pytest.raises(OSError) as closed:
        os.fstat(fd)
    assert closed.value.errno == errno.EBADF
    assert [c.name for c in fs.mutating()] == ["open", "write", "close"]
    assert [(c.name, e) for c, e in fs.fired] == [("close", errno.EIO)]
    assert fs.mutating()[0].trace == ("openat", target, 1) and fs.mutating()[1].trace == ("write", target, 1)


def test_every_rule_counts_a_call_an_earlier_rule_failed(tmp_path: Path) -> None:
    fs = FaultFs()
    fs.fail("mkdir", nth=1, err=errno.ENOSPC)
    fs.fail("mkdir", nth=2, err=errno.EACCES)
    for err in (errno.ENOSPC, errno.EACCES):
        with pytest.raises(NodeError) as e:
            fs.mkdir(str(tmp_path / "d"))
        assert e.value.errno == err
