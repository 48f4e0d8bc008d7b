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


# the combinators whose own message is the whole instance ("{...} is not valid under any of
# the given schemas"): reported only when nothing more precise was found at the same place
_VAGUE = {"anyOf", "oneOf"}


def first_error(schema_path: Path, value: object) -> tuple[str, str] | None:
    """The first violation of the schema in document order, as (JSON path, message), or None.

    At one place, a precise error (an unknown field, a missing one) wins over an ``anyOf``
    that failed as a whole, and no message repeats the whole value: a scenario with ``stepz``
    for ``steps`` is told ``unknown field 'stepz' (did you mean 'steps'?)``, not its whole
    dict (issue 31 item 8)."""
    errors = sorted(
        _validator(schema_path).iter_errors(value),
        key=lambda e: ([(isinstance(p, str), p) for p in e.absolute_path], e.validator in _VAGUE),
    )
    if not errors:
        return None
    return str(errors[0].json_path), _message(errors[0])


def _message(error: Any) -> str:
    """The error in words that name what is wrong, without repeating a large value."""
    schema, instance = error.schema, error.instance
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        import difflib

        known = sorted(schema.get("properties", {}))
        unknown = [k for k in instance if k not in known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(known)})"
            return f"unknown field {unknown[0]!r}{hint}"
    if error.validator in _VAGUE:
        forms = error.validator_value
        if all(isinstance(f, dict) and set(f) == {"required"} for f in forms):
            fields = [name for f in forms for name in f["required"]]
            return f"needs one of the fields {', '.join(map(repr, fields))}"
        return "matches none of the allowed forms"
    message = str(error.message)
    return message if len(message) <= 300 else message[:300] + " …"
