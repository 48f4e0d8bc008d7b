"""Scenario files: load, validate against the schema, select, substitute (DESIGN.md §4).

A scenario is language-neutral JSON; this module only reads and checks it.  Running one is
``runner.py``'s job.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS_DIR = ROOT / "scenarios"
SCHEMA_PATH = SCENARIOS_DIR / "scenario.schema.json"
DEFAULT_NOW = "2026-08-07T01:02:50Z"
DEFAULT_TZ = "UTC"
_PLACEHOLDER = re.compile(r"\$\{(AGENT|HOME|LOCAL|SHARED|ROOT|PID)\}")


class ScenarioError(Exception):
    """A malformed scenario file: names the file and the JSON path."""

    def __init__(self, path: Path | str, json_path: str, message: str) -> None:
        super().__init__(f"{path}: {json_path}: {message}")
        self.path, self.json_path, self.message = str(path), json_path, message


@dataclass(frozen=True)
class Scenario:
    id: str
    clauses: tuple[str, ...]
    data: dict[str, Any]
    path: Path

    @property
    def steps(self) -> list[dict[str, Any]]:
        return list(self.data["steps"])

    @property
    def clock(self) -> dict[str, Any]:
        return {"now": DEFAULT_NOW, "tz": DEFAULT_TZ, "mode": "frozen", **self.data.get("clock", {})}

    @property
    def needs_fresh_process(self) -> bool:
        return bool(self.data.get("fresh_process") or self.data.get("env"))

    @property
    def workers(self) -> set[str]:
        return {s["worker"] for s in self.steps if "worker" in s}


_validator: Any = None


def _schema_validator() -> Any:
    global _validator
    if _validator is None:
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

        _validator = Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    return _validator


def load_file(path: Path) -> Scenario:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ScenarioError(path, "$", f"not UTF-8: {e}") from None
    except json.JSONDecodeError as e:
        raise ScenarioError(path, "$", f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    errors = sorted(_schema_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        best = errors[0]
        raise ScenarioError(path, best.json_path, best.message)
    return Scenario(data["id"], tuple(data["clauses"]), data, path)


def discover(
    root: Path | None = None,
    run: list[str] | None = None,
    skip: list[str] | None = None,
) -> list[Scenario]:
    """Every scenario under ``root`` (default: ``scenarios/conformance``), sorted by id.

    ``run``/``skip`` are globs over scenario ids.  Duplicate ids are an error.
    """
    base = root or SCENARIOS_DIR / "conformance"
    found: dict[str, Scenario] = {}
    for path in sorted(base.rglob("*.json")):
        if path.name.endswith(".schema.json"):
            continue
        sc = load_file(path)
        if sc.id in found:
            raise ScenarioError(path, "$.id", f"duplicate id {sc.id!r} (also {found[sc.id].path})")
        found[sc.id] = sc
    selected = [
        sc
        for sid, sc in sorted(found.items())
        if (not run or any(fnmatch.fnmatchcase(sid, g) for g in run))
        and not (skip and any(fnmatch.fnmatchcase(sid, g) for g in skip))
    ]
    return selected


def content_bytes(content: str | dict[str, str]) -> bytes:
    """A scenario file content: a string (UTF-8; lone surrogates → U+FFFD) or base64."""
    if isinstance(content, dict):
        return base64.b64decode(content["base64"])
    return content.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def substitute(value: Any, names: dict[str, str]) -> Any:
    """Replace ``${AGENT}`` … placeholders everywhere in a JSON value."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: names.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, names) for k, v in value.items()}
    return value

