"""``HANDOFF.md``: bullets scraped before compaction, replaced by the compaction summary.

S-HANDOFF-1..11 and the legacy-location migration S-MIGRATE-8.  Text functions are pure; the
three entry points at the bottom do the I/O, through the safe layer (A-3: the reference reads
non-blocking and no-follow and publishes by rename, where the JS core writes in place).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .context import StoreContext
from .errors import JsTypeError, NodeError
from .fs import atomic_write, exclusive_publish, exists, store_read
from .text import (
    LINE_START,
    UNDEFINED,
    WS_CLASS,
    decode_utf8,
    encode_utf8,
    is_js_number,
    js_slice,
    to_number,
    to_string,
    trim,
    trim_start,
)

DEFAULT_KEEP = 3
MAX_BULLETS = 15
MAX_HANDOFF_SUMMARY_BYTES = 12288
SUMMARY_TRUNCATED = "\n\n<!-- summary truncated: compaction summary exceeds size limit -->"
WRITTEN, EMPTY, DISABLED = "written", "empty", "disabled"

_HEADING = re.compile("#{1,6}" + WS_CLASS)
_MARKER = re.compile("[-*]" + WS_CLASS + "+")
_EMPHASIS = re.compile(r"\*{1,2}([^*]+)\*{1,2}")
_SECTION_START = re.compile(LINE_START + "(?=## )")
_H2_AT_LINE_START = re.compile(LINE_START + "## ")


def _property(obj: object, key: str, holder: str) -> object:
    """``obj[key]`` with V8's TypeError for null/undefined holders (S-ERR-8)."""
    if obj is None or obj is UNDEFINED:
        what = "null" if obj is None else "undefined"
        raise JsTypeError(f"Cannot read properties of {what} (reading '{key}')")
    if isinstance(obj, dict):
        return obj.get(key, UNDEFINED)
    return UNDEFINED


def _iterate(messages: object) -> Iterable[object]:
    if isinstance(messages, str | list):
        return messages
    raise JsTypeError("messages is not iterable")


def assistant_texts(messages: object) -> list[str]:
    """S-HANDOFF-2: trimmed, non-empty concatenated text blocks of assistant messages."""
    texts = []
    for msg in _iterate(messages):
        if _property(msg, "role", "msg") != "assistant":
            continue
        content = _property(msg, "content", "msg")
        if content is None or content is UNDEFINED:
            what = "null" if content is None else "undefined"
            raise JsTypeError(f"Cannot read properties of {what} (reading 'filter')")
        if not isinstance(content, list):
            raise JsTypeError("msg.content.filter is not a function")
        parts = []
        for block in content:
            if _property(block, "type", "b") != "text":
                continue
            text = _property(block, "text", "b")
            parts.append("" if text is None or text is UNDEFINED else to_string(text))
        joined = trim("".join(parts))
        if joined:
            texts.append(joined)
    return texts


def bullets(texts: list[str]) -> list[str]:
    """S-HANDOFF-3: at most 15 bullets from the last 3 texts."""
    out: list[str] = []
    for text in texts[-3:]:
        for piece in text.split("\n"):
            if len(out) >= MAX_BULLETS:
                return out
            p = trim(piece)
            if not p or p.startswith("```") or _HEADING.match(p):
                continue
            p = _MARKER.sub("", p, count=1) if _MARKER.match(p) else p
            out.append("- " + _EMPHASIS.sub(lambda m: m.group(1), p))
    return out


def sections(text: str) -> list[str]:
    """S-HANDOFF-10: cut before every line start followed by ``## ``; drop blank pieces."""
    return [piece for piece in _SECTION_START.split(text) if trim(piece)]


def keep_last(pieces: list[str], keep: object) -> list[str]:
    """``pieces.slice(-keep)`` with ECMAScript conversion (S-HANDOFF-5)."""
    return js_slice(pieces, -to_number(keep))


def is_disabled(keep: object) -> bool:
    """Only a keep that is exactly the number 0 disables (S-HANDOFF-1)."""
    return is_js_number(keep) and keep == 0


def render(pieces: list[str]) -> str:
    return trim_start("\n".join(pieces)) + "\n"


def demote_summary(summary: object) -> str:
    """S-HANDOFF-7: ``## `` → ``### `` at line starts, trimmed, capped at 12 KiB of UTF-8."""
    body = trim(_H2_AT_LINE_START.sub("### ", to_string(summary)))
    data = encode_utf8(body)
    if len(data) > MAX_HANDOFF_SUMMARY_BYTES:
        body = decode_utf8(data[:MAX_HANDOFF_SUMMARY_BYTES]) + SUMMARY_TRUNCATED
    return body


# --- I/O ----------------------------------------------------------------------------------


def migrate_legacy(ctx: StoreContext) -> None:
    """S-MIGRATE-8 (A-3 variant): copy the legacy file forward by exclusive publish."""
    fs, paths = ctx.fs, ctx.paths
    if exists(fs, paths.handoff_file) or not exists(fs, paths.legacy_handoff):
        return
    content = store_read(fs, paths.legacy_handoff)
    try:
        exclusive_publish(fs, paths.handoff_file, content)
    except NodeError as e:
        if e.code != "EEXIST":
            raise


def _read_existing(ctx: StoreContext) -> str:
    if not exists(ctx.fs, ctx.paths.handoff_file):
        return ""
    return store_read(ctx.fs, ctx.paths.handoff_file)


def write_handoff(ctx: StoreContext, messages: object, reason: object, keep: object) -> str:
    """S-HANDOFF-1..6."""
    keep = DEFAULT_KEEP if keep is UNDEFINED else keep
    if is_disabled(keep):
        return DISABLED
    found = bullets(assistant_texts(messages))
    if not found:
        return EMPTY
    entry = f"## {ctx.now_iso()} ({to_string(reason)})\n\n" + "\n".join(found) + "\n"
    migrate_legacy(ctx)
    existing = _read_existing(ctx)
    separator = "\n" if existing and not existing.endswith("\n") else ""
    updated = existing + separator + "\n" + entry
    atomic_write(ctx.fs, ctx.paths.handoff_file, render(keep_last(sections(updated), keep)))
    return WRITTEN


def replace_latest(ctx: StoreContext, summary: object, reason: object, keep: object) -> str:
    """S-HANDOFF-7/8: the last section becomes the consolidation entry."""
    keep = DEFAULT_KEEP if keep is UNDEFINED else keep
    if is_disabled(keep):
        return DISABLED
    body = demote_summary(summary)
    entry = f"## {ctx.now_iso()} Consolidation ({to_string(reason)})\n\n{body}\n"
    migrate_legacy(ctx)
    pieces = sections(_read_existing(ctx))
    if pieces:
        pieces[-1] = entry
    else:
        pieces.append(entry)
    atomic_write(ctx.fs, ctx.paths.handoff_file, render(keep_last(pieces, keep)))
    return WRITTEN


def read_handoff(ctx: StoreContext) -> str:
    """S-HANDOFF-9: the last section, trimmed; empty when there is none."""
    migrate_legacy(ctx)
    pieces = sections(_read_existing(ctx))
    return trim(pieces[-1]) if pieces else ""
