"""memconform's reference core: the flat-file agent memory store as SPEC.md defines it.

Standard library only.  ``Store`` is the public API (one per process, like one loaded JS core);
the pure format functions are re-exported here under the JS core's names in snake_case.
"""

from .clock import Clock, ControlledClock, SystemClock
from .compaction import (
    build_compaction_consolidation_prompt,
    build_consolidation_prompt,
    decide_compaction_action,
    detect_incomplete_task,
)
from .config import (
    DEFAULT_AUTO_RESUME_AFTER_THRESHOLD,
    DEFAULT_CONSOLIDATE_ON_COMPACT,
    DEFAULT_HANDOFF_KEEP,
    DEFAULT_INJECT_INTERVAL,
    DEFAULT_SHARED_DIR,
    DEFAULT_STALE_DAYS,
    MAX_LINES,
    Rules,
    render_rules_to_markdown,
)
from .errors import AggregateJsError, JsError, JsTypeError, NodeError, UnsafeFileError
from .fs import MAX_BYTES, Fs
from .handoff import MAX_HANDOFF_SUMMARY_BYTES
from .index import INITIAL_MEMORY, maintain_index, parse_index_line, to_slug, upsert_index_line
from .lock import LOCK_BUSY_MESSAGE
from .store import MAX_SUMMARY_LENGTH, RESERVED_TOPIC_SLUG, Store

__all__ = [
    "DEFAULT_AUTO_RESUME_AFTER_THRESHOLD",
    "DEFAULT_CONSOLIDATE_ON_COMPACT",
    "DEFAULT_HANDOFF_KEEP",
    "DEFAULT_INJECT_INTERVAL",
    "DEFAULT_SHARED_DIR",
    "DEFAULT_STALE_DAYS",
    "INITIAL_MEMORY",
    "LOCK_BUSY_MESSAGE",
    "MAX_BYTES",
    "MAX_HANDOFF_SUMMARY_BYTES",
    "MAX_LINES",
    "MAX_SUMMARY_LENGTH",
    "RESERVED_TOPIC_SLUG",
    "AggregateJsError",
    "Clock",
    "ControlledClock",
    "Fs",
    "JsError",
    "JsTypeError",
    "NodeError",
    "Rules",
    "Store",
    "SystemClock",
    "UnsafeFileError",
    "build_compaction_consolidation_prompt",
    "build_consolidation_prompt",
    "decide_compaction_action",
    "detect_incomplete_task",
    "maintain_index",
    "parse_index_line",
    "render_rules_to_markdown",
    "to_slug",
    "upsert_index_line",
]
