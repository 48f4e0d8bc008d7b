"""Recording a machine run as a scenario, and writing it as a regression file (docs/ARCHITECTURE.md §4).

Each step a machine performs is recorded in scenario form while it runs — protocol ops with
the results the machine expects (the shadow's, its own prediction's or the reference's), file
actions with the exact bytes — so the final, shrunk failing example is already a scenario when
it fails.  Files are validated against ``scenarios/scenario.schema.json`` before they are kept.
(The regression's ``model`` field, a schema name, holds the machine's registered name.)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..gate import regressions
from ..gate.regressions import content
from ..gate.scenarios import DEFAULT_NOW


class Recorder:
    """The scenario being built by one machine run (one Hypothesis example)."""

    def __init__(self, machine: str) -> None:
        self.machine = machine
        self.clock: dict[str, str] = {"now": DEFAULT_NOW, "tz": "UTC", "mode": "frozen"}
        self.given: dict[str, str | dict[str, str]] = {}
        self.steps: list[dict[str, Any]] = []
        self.then: dict[str, Any] = {}
        self.clauses: list[str] = []
        self.tags: list[str] = ["regression", f"machine:{machine}"]
        self.syscall: str | None = None
        self.notes: list[str] = []

    def given_file(self, rel: str, data: bytes) -> None:
        self.given[rel] = content(data)

    def step(self, op: str, args: dict[str, Any] | None = None, **expect: Any) -> dict[str, Any]:
        """Record one op; ``expect`` holds scenario expectations (``result``, ``error`` …)."""
        s: dict[str, Any] = {"op": op}
        if args is not None:
            s["args"] = args
        if expect:
            s["expect"] = expect
        self.steps.append(s)
        return s

    def put_file(self, rel: str, data: bytes) -> None:
        self.step("put_file", {"path": rel, "content": content(data)})

    def delete_file(self, rel: str) -> None:
        self.step("delete_file", {"path": rel})

    def clause(self, *ids: str) -> None:
        for c in ids:
            if c not in self.clauses:
                self.clauses.append(c)

    def scenario(self, error: BaseException, *, found_in: str, seed: int | None) -> dict[str, Any]:
        defect = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        body = json.dumps([self.given, self.steps], sort_keys=True, default=str)
        digest = hashlib.sha1(f"{defect}\n{body}".encode()).hexdigest()[:10]
        data: dict[str, Any] = {
            "id": f"regressions/{self.machine}-{digest}",
            "clauses": self.clauses or ["S-INV-2"],
            "description": (
                f"Shrunk failing example of the {self.machine} machine "
                f"({type(error).__name__}: {defect})."
                + "".join(f" {n}" for n in self.notes)
            ),
            "tags": self.tags,
            "clock": self.clock,
            "steps": self.steps or [{"op": "memory_dir"}],
            "regression": {
                "defect": defect,
                "found_in": found_in,
                "model": self.machine,
            },
        }
        if seed is not None:
            data["regression"]["seed"] = seed
        if self.syscall is not None:
            data["regression"]["syscall"] = self.syscall
        if self.given:
            data["given"] = {"files": self.given}
        if self.then:
            data["then"] = self.then
        return data


def write(data: dict[str, Any], directory: Path) -> Path:
    """Write a scenario as ``<directory>/<machine>-<digest>.json`` and validate it there."""
    return regressions.write(data, directory)
