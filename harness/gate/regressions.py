"""Every finding a regression: a finding and the scenario that shows it, written as a file.

Each command that finds something (crash, errno, locks, interop, fuzz) builds the scenario
that reproduces it — given files, steps, what must hold after — and hands it here with the
finding.  The file lands in ``scenarios/regressions/`` of a clone, ``./memconform-regressions``
when memconform is installed (never site-packages), or ``--export DIR``, named by the
finding's regression key, so the same defect found twice is written once; ``memconform replay
FILE --impl …`` runs it on any implementation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ..oracles.findings import Finding
from .scenarios import SCENARIOS_DIR, ScenarioError, load_file

INSTALLED_DIR = Path("memconform-regressions")


def default_dir(corpus: Path = SCENARIOS_DIR) -> Path:
    """``scenarios/regressions`` of a clone (the corpus is the repository's folder, beside
    ``pyproject.toml``), else ``./memconform-regressions`` in the working directory: an
    installed wheel never writes into site-packages."""
    in_clone = (corpus.parent.parent / "pyproject.toml").is_file()
    return corpus / "regressions" if in_clone else INSTALLED_DIR


DEFAULT_DIR = default_dir()
_UNSAFE = re.compile(r"[^a-z0-9]+")


def content(data: bytes) -> str | dict[str, str]:
    """Scenario file content: text when the bytes are UTF-8, base64 otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def file_stem(finding: Finding) -> str:
    """``<kind>-<impl>-<digest of the regression key>``: stable across runs, one per key."""
    digest = hashlib.sha1("\x00".join(finding.key).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    impl = _UNSAFE.sub("-", finding.impl.lower()).strip("-") or "impl"
    kind = _UNSAFE.sub("-", finding.kind.lower()).strip("-") or "finding"
    return f"{kind}-{impl}-{digest}"


def write(data: dict[str, Any], directory: Path, stem: str | None = None) -> Path:
    """Write a scenario as JSON under ``directory`` and validate it where it lies.

    A file that fails the scenario schema is kept as ``*.invalid.json`` (so it can be read) and
    the error re-raised: an exported regression that cannot replay is a bug of the exporter.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem or str(data['id']).rsplit('/', 1)[-1]}.json"
    try:
        raw = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it as a JSON escape
        raw = (json.dumps(data, indent=2) + "\n").encode("ascii")
    path.write_bytes(raw)
    try:
        load_file(path)
    except ScenarioError:
        path.rename(path.with_suffix(".invalid.json"))
        raise
    return path


def export(finding: Finding, scenario: dict[str, Any], directory: Path | None = None) -> Finding:
    """Write ``scenario`` as the regression of ``finding``; return the finding pointing at it.

    ``scenario`` holds ``clauses``, ``clock``, ``given``, ``steps`` and ``then`` as in any
    scenario file; id, description, tags and the ``regression`` block are filled in here from
    the finding.  An existing file for the same key is kept, not rewritten.
    """
    target = DEFAULT_DIR if directory is None else directory
    stem = file_stem(finding)
    path = target / f"{stem}.json"
    if not path.exists():
        data = dict(scenario)
        data["id"] = f"regressions/{stem}"
        data.setdefault("clauses", [finding.clause] if finding.clause.startswith("S-") else ["S-INV-2"])
        data.setdefault(
            "description",
            f"{finding.severity} {finding.kind} found in {finding.impl or 'an implementation'}"
            + (f" at {finding.op}" if finding.op else "")
            + (f" ({finding.syscall})" if finding.syscall else "")
            + f": {finding.evidence}",
        )
        data["tags"] = sorted({*data.get("tags", []), "regression", f"finding:{finding.kind}"})
        block: dict[str, Any] = {
            "defect": finding.evidence[:300] or finding.kind,
            "found_in": finding.impl,
            "kind": finding.kind,
            "severity": finding.severity,
        }
        if finding.syscall:
            block["syscall"] = finding.syscall
        if finding.reproduce:
            block["command"] = finding.reproduce
        data["regression"] = {**block, **data.get("regression", {})}
        write(data, target, stem)
    return finding.with_regression(str(path))
