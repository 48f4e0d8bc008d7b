"""Deliberately broken copies of the reference, planted through a driver shim.

A ``sitecustomize.py`` on the driver's ``PYTHONPATH`` patches the reference in every driver
process started afterwards (``python -m memconform.reference serve`` imports it first), so a
test can show that a check fails on the broken behaviour and passes on the reference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate.runner import Worker
from memconform.harness.gate.scenarios import load_file

PYTHON = PeerSpec("python")


def plant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    """Every reference driver started from here on runs ``code`` first."""
    site = tmp_path / "broken-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(code)
    monkeypatch.setenv("PYTHONPATH", str(site))


def failures(path: Path, spec: PeerSpec = PYTHON) -> list[str]:
    """The rendered failures of one scenario file on ``spec`` (empty: it passed)."""
    worker = Worker(spec)
    try:
        outcome = worker.run(load_file(path))
    finally:
        worker.close()
    assert outcome.status in ("pass", "fail"), (outcome.status, outcome.reason)
    return [f.render() for f in outcome.failures]


def cross_failures(path: Path, a: PeerSpec = PYTHON, b: PeerSpec = PYTHON) -> list[str]:
    """The rendered failures of one cross sequence on the pair ``a``/``b``."""
    from memconform.harness.gate.cross import CrossWorker, Pair

    outcome = CrossWorker(Pair(a, b)).run(load_file(path))
    assert outcome.status in ("pass", "fail"), (outcome.status, outcome.reason)
    return [f.render() for f in outcome.failures]
