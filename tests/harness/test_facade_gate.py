"""The gate through the facade judges the reference as ``--impl python`` does (issue 22 item 9, C-3).

``memconform conformance --impl pi:$(memconform facade-path)`` drives the reference through
openpi's JS API: the pi driver loads the facade as its core.  The driver's pinned or virtual
clock (clock.mjs) now reaches the facade's server before every call and the server's virtual
time comes back, and the facade names itself as the reference, so every scenario the pi driver
can run ends as it ends on ``--impl python``: a self-check that the facade *is* the reference.

The default suite runs one shard of the corpus (a stable, cost-balanced slice across every
area); ``MEMCONFORM_FACADE_GATE=all`` runs the whole corpus both ways.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from memconform.harness.cli import main
from memconform.harness.drivers.peer_suites import FACADE

SHARD = "1/24"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def _report(tmp_path: Path, impl: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = tmp_path / f"{impl.split(':')[0]}.json"
    part = [] if os.environ.get("MEMCONFORM_FACADE_GATE") == "all" else ["--shard", SHARD]
    main(["conformance", "--impl", impl, "--quiet", "--no-export", "--timeout", "60", "--json", str(out), *part])
    capsys.readouterr()
    report: dict[str, Any] = json.loads(out.read_text("utf-8"))
    return report


@needs_node
def test_c_3_the_gate_through_the_facade_is_the_gate_on_the_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCONFORM_PYTHON", sys.executable)
    python = _report(tmp_path, "python", capsys)
    facade = _report(tmp_path, f"pi:{FACADE}", capsys)
    assert [(i["name"], i["version"]) for i in facade["impls"]] == [(i["name"], i["version"]) for i in python["impls"]]
    on_python = {s["id"]: s["status"] for s in python["scenarios"]}
    ran = {s["id"]: s for s in facade["scenarios"] if s["status"] != "skip"}
    assert len(ran) >= 0.8 * len(on_python), "most scenarios run through the pi driver"
    differ = {i: (s["status"], on_python.get(i), s["failures"][:2]) for i, s in ran.items() if s["status"] != on_python.get(i)}
    assert differ == {}
    assert facade["stats"]["failed"] == 0 and facade["verdict"] == python["verdict"]
