"""Protocol ops that only the JS-API facade needs (``harness/drivers/node/reference-core.mjs``).

The facade answers every export of openpi 0.3.9's ``memory-core.mjs`` through ``serve``; the
exports with no store-level op of their own (the constants and paths, ``upsertIndexLine``,
``maintainIndex``) are answered here, so the facade itself holds no store logic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from .config import (
    DEFAULT_AUTO_RESUME_AFTER_THRESHOLD,
    DEFAULT_CONFIG_TEXT,
    DEFAULT_CONSOLIDATE_ON_COMPACT,
    DEFAULT_HANDOFF_KEEP,
    DEFAULT_INJECT_INTERVAL,
    DEFAULT_SHARED_DIR,
    DEFAULT_STALE_DAYS,
    MAX_LINES,
)
from .errors import JsTypeError
from .fs import MAX_BYTES
from .handoff import MAX_HANDOFF_SUMMARY_BYTES
from .index import INITIAL_MEMORY, maintain_index, require_string, upsert_index_line
from .index_engine import as_predicate
from .store import MAX_SUMMARY_LENGTH, RESERVED_TOPIC_SLUG, Store
from .text import UNDEFINED, to_number, to_string

Args = Mapping[str, Any]


def constants(store: Store) -> dict[str, object]:
    """The exported constants and load-time paths (SPEC §0 Operations, S-PATH-1..3)."""
    return {
        "MEMORY_RULES": store.paths.memory_rules,
        "HANDOFF_FILE": store.paths.handoff_file,
        "MAX_LINES": MAX_LINES,
        "MAX_BYTES": MAX_BYTES,
        "DEFAULT_STALE_DAYS": DEFAULT_STALE_DAYS,
        "DEFAULT_INJECT_INTERVAL": DEFAULT_INJECT_INTERVAL,
        "DEFAULT_HANDOFF_KEEP": DEFAULT_HANDOFF_KEEP,
        "DEFAULT_AUTO_RESUME_AFTER_THRESHOLD": DEFAULT_AUTO_RESUME_AFTER_THRESHOLD,
        "DEFAULT_CONSOLIDATE_ON_COMPACT": DEFAULT_CONSOLIDATE_ON_COMPACT,
        "DEFAULT_SHARED_DIR": DEFAULT_SHARED_DIR,
        "MAX_SUMMARY_LENGTH": MAX_SUMMARY_LENGTH,
        "RESERVED_TOPIC_SLUG": RESERVED_TOPIC_SLUG,
        "MAX_HANDOFF_SUMMARY_BYTES": MAX_HANDOFF_SUMMARY_BYTES,
        "INITIAL_MEMORY": INITIAL_MEMORY,
        "INITIAL_RULES_JSONC": DEFAULT_CONFIG_TEXT,
    }


def _lines(args: Args) -> list[str]:
    """The JS functions read ``lines.length`` and parse every line they pass (S-ERR-8)."""
    lines = args.get("lines", UNDEFINED)
    if lines is UNDEFINED or lines is None:
        what = "undefined" if lines is UNDEFINED else "null"
        raise JsTypeError(f"Cannot read properties of {what} (reading 'length')")
    if not isinstance(lines, list):
        raise JsTypeError("lines is not an array")
    return [require_string(line, "line", "match") for line in lines]


def upsert(store: Store, args: Args) -> list[str]:
    """S-IDX-3 with the store's clock read once (the JS core's ``nowIso()``)."""
    return upsert_index_line(
        _lines(args),
        to_string(args.get("filename", UNDEFINED)),
        to_string(args.get("name", UNDEFINED)),
        to_string(args.get("summary", UNDEFINED)),
        args.get("pin", False),
        store.now_iso(),
    )


def maintain(store: Store, args: Args) -> list[str]:
    """S-IDX-4..6 against ``memoryDir`` (absent: the active directory, resolved now).

    ``staleAfterDays`` comes from the caller's config object, as in JS; a value that is not a
    number (JS ``NaN > 0`` is false) disables stamping and healing alike, so it maps to 0.
    """
    config = args.get("config") or {}
    days = to_number(config.get("staleAfterDays", UNDEFINED)) if isinstance(config, Mapping) else math.nan
    directory = args.get("memoryDir", UNDEFINED)
    directory = store.get_memory_dir() if directory is UNDEFINED else to_string(directory)
    return maintain_index(
        _lines(args),
        0.0 if math.isnan(days) else days,
        store.clock.now_ms(),
        as_predicate(store._regular_in(directory)),
    )


def ops(store: Store) -> dict[str, Callable[[Args], object]]:
    """The facade's ops bound to ``store`` (``serve`` rebuilds them on ``reset``)."""
    return {
        "constants": lambda a: constants(store),
        "upsert_index_line": lambda a: upsert(store, a),
        "maintain_index": lambda a: maintain(store, a),
    }
