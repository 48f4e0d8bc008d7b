"""The op vocabulary of the peer protocol, read from ``ops.schema.json`` beside it (issue 14 item 6).

One file names every op a driver may offer, with the JSON Schema of its ``args`` and of its
answer's ``result``; the reference's ``serve``, the node drivers' ``hello`` lists and the
scenarios are held to it by ``tests/harness/test_op_vocabulary.py``.  This module only reads
it: the op names, an op's group, and validation of one request or one result.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parent
OPS_SCHEMA = SCHEMAS / "ops.schema.json"
PROTOCOL_SCHEMA = Path(__file__).resolve().parent / "protocol.schema.json"


@cache
def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(OPS_SCHEMA.read_text(encoding="utf-8"))
    return data


def vocabulary() -> frozenset[str]:
    """Every op of the protocol."""
    return frozenset(schema()["$defs"]["ops"])


def entry(op: str) -> dict[str, Any]:
    """``{group, description, args, result}`` of one op (KeyError: not in the vocabulary)."""
    found: dict[str, Any] = schema()["$defs"]["ops"][op]
    return found


def clock_modes() -> tuple[str, ...]:
    """The ``set_clock`` modes the protocol knows."""
    return tuple(entry("set_clock")["args"]["properties"]["mode"]["enum"])


@cache
def _registry() -> Any:
    from referencing import Registry, Resource

    resources = []
    for path in (OPS_SCHEMA, PROTOCOL_SCHEMA):
        data = json.loads(path.read_text(encoding="utf-8"))
        resources.append((data["$id"], Resource.from_contents(data)))
    return Registry().with_resources(resources)


def _errors(subschema: dict[str, Any], value: object) -> list[str]:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    wrapped = {"$schema": "https://json-schema.org/draft/2020-12/schema",
               "$id": "https://memconform.invalid/ops-check.json", **subschema}
    if "$ref" in subschema:
        ref = subschema["$ref"]
        base = "https://memconform.invalid/"
        wrapped["$ref"] = ref if "://" in ref else base + ref
    validator = Draft202012Validator(wrapped, registry=_registry())
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(value)]


def request_errors(request: dict[str, Any]) -> list[str]:
    """What is wrong with ``{op, args}`` against the vocabulary (empty: fine)."""
    op = request.get("op")
    if op not in vocabulary():
        return [f"$.op: {op!r} is not an op of {OPS_SCHEMA.name}"]
    return [f"args{p[1:]}" if p.startswith("$") else p
            for p in _errors(_local(entry(str(op))["args"]), request.get("args", {}))]


def result_errors(op: str, result: object) -> list[str]:
    """What is wrong with an ``ok`` answer's ``result`` to ``op`` (empty: fine)."""
    return _errors(_local(entry(op)["result"]), result)


def _local(sub: dict[str, Any]) -> dict[str, Any]:
    """Resolve the ops file's own ``#/…`` refs against it (the wrapper has another ``$id``)."""
    text = json.dumps(sub).replace('"#/', '"ops.schema.json#/')
    out: dict[str, Any] = json.loads(text)
    return out
