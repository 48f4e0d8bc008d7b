"""The top of every command's JSON report: the same fields whichever command wrote it.

A CI job reads ``verdict`` and ``summary`` without knowing which command ran; ``findings`` are
``harness.oracles.findings.Finding`` values; ``stats`` holds the command's own figures
(scenarios run, ops, states, states per second …).  ``report.schema.json`` (beside this module) is the
contract, shipped with the package.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from ..oracles.findings import Finding, summary

# package data of the one namespace, found from any working directory (as the corpus is)
SCHEMA_PATH = Path(str(resources.files("memconform") / "harness" / "reports" / "report.schema.json"))


def tool_version() -> str:
    try:
        return metadata.version("memconform")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "unknown"


@dataclass(frozen=True)
class ImplInfo:
    """An implementation as given (``spec``) and as it reported itself in ``hello``."""

    spec: str
    name: str = "unknown"
    version: str = "unknown"
    ops: frozenset[str] | None = None  # what its hello offers (None: it did not say)


@dataclass
class RunReport:
    """One command's run, built as it goes and written once at the end."""

    command: list[str] = field(default_factory=lambda: list(sys.argv))
    impls: list[ImplInfo] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    seconds: float = 0.0
    verdict: str = "error"
    stats: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def finish(self, verdict: str) -> RunReport:
        self.seconds = round(time.time() - self.started, 3)
        self.verdict = verdict
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": {"name": "memconform", "version": tool_version()},
            "command": self.command,
            "impls": [{"spec": i.spec, "name": i.name, "version": i.version} for i in self.impls],
            "started": datetime.fromtimestamp(self.started, UTC).isoformat(timespec="seconds"),
            "seconds": self.seconds,
            "verdict": self.verdict,
            "summary": summary(self.findings),
            "stats": self.stats,
            "findings": [f.to_json() for f in self.findings],
        }


def write(path: str | Path, report: RunReport, extra: dict[str, Any] | None = None) -> Path:
    """Write ``report`` (plus a command's own sections in ``extra``) as JSON; return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = report.to_json() | (extra or {})
    out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def argv(args: Sequence[str] | None = None) -> list[str]:
    """The command line as a user would retype it."""
    return ["memconform", *(sys.argv[1:] if args is None else args)]
