"""JSON Schema checks for scenario files and protocol messages, with validators built lazily.

``jsonschema`` is imported on first use only: a plain run that validates nothing (the
protocol check is opt-in) never pays for it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any


@cache
def _validator(schema_path: Path) -> Any:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    return Draft202012Validator(json.loads(schema_path.read_text(encoding="utf-8")))


def first_error(schema_path: Path, value: object) -> tuple[str, str] | None:
    """The first violation of the schema in document order, as (JSON path, message), or None."""
    errors = sorted(
        _validator(schema_path).iter_errors(value),
        key=lambda e: [(isinstance(p, str), p) for p in e.absolute_path],
    )
    if not errors:
        return None
    return str(errors[0].json_path), str(errors[0].message)
