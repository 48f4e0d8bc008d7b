"""``Store``: the public API of the reference, one instance per process (S-INV-10).

It holds the paths captured at load time, the ``Fs`` seam, the clock, the index engine and
the little process-global state the JS core keeps (carry-over flag, last configuration error).
Every operation here is the I/O edge around the pure functions of the other modules.  The
seams default to the plain code (``Fs``, ``PlainEngine``); entry points inject the fast paths
(``reference.edge``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import carryover, handoff
from .clock import Clock, SystemClock, local_iso, utc_date
from .config import DEFAULT_CONFIG_TEXT, Rules, rules_from_text
from .context import StoreContext
from .errors import AggregateJsError, NodeError, message_of
from .fs import (
    Fs,
    atomic_write,
    bounded_read,
    exclusive_publish,
    exists,
    is_regular_file,
    store_read,
)
from .index import (
    INITIAL_MEMORY,
    PIN_TOKEN,
    Ambiguous,
    IndexLine,
    find_date,
    require_string,
    summary_of,
    to_slug,
)
from .index_engine import Index, IndexEngine, PlainEngine
from .lock import LOCK_BUSY_MESSAGE, LockBusy, with_lock
from .paths import StorePaths, index_path, join
from .text import (
    UNDEFINED,
    collapse_whitespace,
    encode_utf8,
    is_truthy,
    js_lower,
    js_slice,
    to_number,
    to_string,
    trim,
    utf16_slice,
)
from .tombstones import add_tombstone, clear_tombstone, read_tombstones
from .topic import compose_topic, display_body, names_topic

MAX_SUMMARY_LENGTH = 500
SNIPPET_LENGTH = 120
RESERVED_TOPIC_SLUG = "last-session-recap"
RECAP_FILENAME = RESERVED_TOPIC_SLUG + ".md"
NOT_FOUND_TOPIC = "_(file not found)_"
DIAG_PREFIX = "[openpi-memory]"

SIZE_MARKER = "\n\n<!-- memory truncated: MEMORY.md exceeds size limit; shorten the index -->"
TOPIC_SIZE_MARKER = (
    "\n\n<!-- memory truncated: topic exceeds size limit; read the file directly for the full body -->"
)

BLANK_TOPIC = "Invalid topic: topic must not be blank."
LINK_CHARS_TOPIC = "Invalid topic: topic must not contain newlines or Markdown link characters."
NO_SLUG_TOPIC = "Invalid topic: topic must contain at least one ASCII letter or number."
RESERVED_RECAP_TOPIC = (
    'Reserved topic: "last-session-recap" has been retired. Persist durable facts as their own '
    "topics; automatic session orientation is managed in HANDOFF.md."
)
RESERVED_INDEX_TOPIC = 'Invalid topic: "MEMORY.md" is reserved for the memory index.'
NO_INDEX = "No memory index found."


@dataclass(frozen=True)
class IndexEntry:
    """One displayed index entry (S-DISP-2)."""

    name: str
    filename: str
    date: str
    summary: str
    pinned: bool
    stale: bool


@dataclass(frozen=True)
class SearchHit:
    """One search result (S-DISP-4/5)."""

    name: str
    filename: str
    match_type: str
    snippet: str

    def to_js(self) -> dict[str, str]:
        return {
            "name": self.name,
            "filename": self.filename,
            "matchType": self.match_type,
            "snippet": self.snippet,
        }


def stderr_diagnostics(line: str) -> None:
    """One line on stderr, encoded as Node writes it (a lone surrogate becomes U+FFFD)."""
    sys.stderr.flush()
    sys.stderr.buffer.write(encode_utf8(line + "\n"))
    sys.stderr.buffer.flush()


class Store:
    """The memory store of one installation, as one loaded JS core sees it."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        fs: Fs | None = None,
        clock: Clock | None = None,
        diagnostics: Callable[[str], None] = stderr_diagnostics,
        index_engine: IndexEngine | None = None,
    ) -> None:
        self._env = env
        self.paths = StorePaths.from_env(env)
        self.fs = fs if fs is not None else Fs()
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.index_engine: IndexEngine = index_engine if index_engine is not None else PlainEngine()
        self._diagnostics = diagnostics
        self._last_config_error: str | None = None
        self._carried_over = False

    def renewed(self, clock: Clock) -> Store:
        """This installation as a freshly loaded core sees it (S-INV-10): the same environment,
        ``Fs``, diagnostics and index engine, paths captured anew, no process state kept."""
        return Store(
            self._env,
            fs=self.fs,
            clock=clock,
            diagnostics=self._diagnostics,
            index_engine=self.index_engine,
        )

    # --- diagnostics, time --------------------------------------------------------------

    def diag(self, context: str, message: object) -> None:
        """S-ERR-5: one stderr line per diagnostic."""
        self._diagnostics(f"{DIAG_PREFIX} {context}: {message_of(message)}")

    def now_iso(self) -> str:
        return local_iso(self.clock.now_ms())

    @property
    def context(self) -> StoreContext:
        """What carry-over and handoff use, with the clock of this moment (``set_clock`` swaps it)."""
        return StoreContext(self.fs, self.clock, self.paths, self.diag)

    # --- configuration (S-CFG) ---------------------------------------------------------

    def parse_rules(self) -> Rules:
        """Read ``memory.jsonc`` afresh, creating it first when missing; never raises."""
        try:
            if not exists(self.fs, self.paths.memory_rules):
                self._bootstrap_config()
            return rules_from_text(store_read(self.fs, self.paths.memory_rules, follow=True))
        except Exception as e:
            message = message_of(e)
            if message != self._last_config_error:
                self._last_config_error = message
                self.diag("memory.jsonc parse failed, using defaults", message)
            return Rules()

    def _bootstrap_config(self) -> None:
        """S-CFG-2: legacy content (backed up) or the default, published exclusively."""
        self.fs.mkdir(self.paths.agent_dir)
        content = DEFAULT_CONFIG_TEXT
        if exists(self.fs, self.paths.legacy_rules):
            content = store_read(self.fs, self.paths.legacy_rules, follow=True)
            if not exists(self.fs, self.paths.legacy_rules_backup):
                self._publish_ignoring_existing(self.paths.legacy_rules_backup, content)
        self._publish_ignoring_existing(self.paths.memory_rules, content)

    def _publish_ignoring_existing(self, target: str, content: str) -> None:
        try:
            exclusive_publish(self.fs, target, content)
        except NodeError as e:
            if e.code != "EEXIST":
                raise

    # --- locations (S-PATH) -------------------------------------------------------------

    def get_memory_dir(self) -> str:
        """S-PATH-4: resolved afresh; enabling the shared dir runs carry-over first."""
        if self.parse_rules().shared_dir:
            self._carry_over()
            return self.paths.shared_dir
        return self.paths.local_dir

    def get_memory_index(self) -> str:
        return index_path(self.get_memory_dir())

    def is_shared(self, directory: str) -> bool:
        """S-PATH-6: shared mode is the acquired directory, not the flag."""
        return directory == self.paths.shared_dir

    def _carry_over(self) -> None:
        if self._carried_over:
            return
        self._carried_over = carryover.run(self.context)

    def reset_carry_over(self) -> None:
        """S-MIGRATE-9: forget the done flag and delete the sentinel."""
        self._carried_over = False
        try:
            self.fs.unlink(self.paths.carry_over_sentinel)
        except NodeError:
            pass

    def _with_lock(self, directory: str, fn: Callable[[str], Any]) -> Any:
        return with_lock(self.fs, self.clock, directory, self.is_shared(directory), fn)

    def _regular_in(self, directory: str) -> set[str] | Callable[[str], bool]:
        """S-IO-1 for every entry of an index at once: one directory listing.

        A directory that cannot be listed (search permission only, no descriptor left) may
        still answer ``lstat``: then each entry is probed on its own, as the JS core does.
        """
        try:
            return self.fs.regular_names(directory)
        except NodeError:
            return lambda filename: is_regular_file(self.fs, join(directory, filename))

    def _maintain(self, index: Index, directory: str) -> Index:
        """S-IDX-7: maintenance with a fresh configuration read."""
        stale_days = self.parse_rules().stale_after_days
        return index.maintained(stale_days, self.clock.now_ms(), self._regular_in(directory))

    def _publish_index(self, directory: str, index: Index) -> None:
        atomic_write(self.fs, index_path(directory), self.index_engine.publishing(index))

    # --- write (S-WRITE) ----------------------------------------------------------------

    def execute_write_memory(
        self,
        topic: object = UNDEFINED,
        content: object = UNDEFINED,
        summary: object = UNDEFINED,
        pin: object = False,
        mode: object = "append",
        overwrite: object = UNDEFINED,
    ) -> str:
        if not isinstance(topic, str) or trim(topic) == "":
            return BLANK_TOPIC
        if any(ch in topic for ch in "\r\n[]()"):
            return LINK_CHARS_TOPIC
        slug = to_slug(topic)
        if slug == "":
            return NO_SLUG_TOPIC
        topic = trim(topic)
        summary_text = utf16_slice(
            trim(collapse_whitespace(to_string(summary))), 0, MAX_SUMMARY_LENGTH
        )
        if slug == RESERVED_TOPIC_SLUG:
            return RESERVED_RECAP_TOPIC
        if slug == "memory":
            return RESERVED_INDEX_TOPIC
        replace = mode == "replace" or overwrite is True
        write = _Write(self, topic, slug, to_string(content), summary_text, is_truthy(pin), replace)
        try:
            return str(self._with_lock(self.get_memory_dir(), write.run))
        except LockBusy:
            return LOCK_BUSY_MESSAGE

    # --- remove and pin (S-REMOVE, S-PIN) ------------------------------------------------

    def _locate(self, directory: str, topic: object) -> tuple[Index, Any]:
        """Shared prologue of remove and pin: the index and the lookup result."""
        path = index_path(directory)
        if not exists(self.fs, path):
            return self.index_engine.read(INITIAL_MEMORY), NO_INDEX
        index = self.index_engine.read(store_read(self.fs, path))
        found = index.find(topic)
        if found is None:
            return index, f'No entry found matching "{to_string(topic)}".'
        if isinstance(found, Ambiguous):
            names = ", ".join(found.names)
            return index, f'Multiple entries match "{to_string(topic)}", be more specific: {names}'
        return index, found

    def find_entry_file(self, topic: object) -> tuple[str | None, str]:
        """The file of the index entry ``topic`` names, matched as remove and pin match it
        (S-IDX-8), or None and the not-found or ambiguous text: the CLI's ``show`` takes a
        name as its other verbs do."""
        _, found = self._locate(self.get_memory_dir(), topic)
        if isinstance(found, str):
            return None, found
        return str(found.entry.filename), ""

    def execute_remove_memory(self, topic: object = UNDEFINED) -> str:
        def remove(directory: str) -> str:
            index, found = self._locate(directory, topic)
            if isinstance(found, str):
                return found
            entry = found.entry
            if entry.pinned:
                return (
                    f'Cannot remove "{entry.name}" — it is pinned. '
                    f"Unpin it first with: /memory unpin {to_string(topic)}"
                )
            index = self._maintain(index.without(found.index), directory)
            if self.is_shared(directory):
                add_tombstone(self.fs, directory, entry.filename)
            self._publish_index(directory, index)
            return f'Removed "{entry.name}" from the index. Topic file is preserved on disk.'

        try:
            return str(self._with_lock(self.get_memory_dir(), remove))
        except LockBusy:
            return LOCK_BUSY_MESSAGE

    def execute_pin_memory(self, topic: object = UNDEFINED, pin: object = UNDEFINED) -> str:
        def pin_entry(directory: str) -> str:
            index, found = self._locate(directory, topic)
            if isinstance(found, str):
                return found
            entry, before = found.entry, index.lines[found.index]
            current = PIN_TOKEN in before
            if isinstance(pin, bool) and pin == current:
                state = "pinned" if pin else "unpinned"
                return f'"{entry.name}" is already {state}.'
            if is_truthy(pin):
                cut = before.index(entry.mid) + len(entry.mid)
                changed = before[:cut] + " " + PIN_TOKEN + before[cut:]
            else:
                changed = before.replace(" " + PIN_TOKEN, "", 1)
            index = self._maintain(index.replaced(found.index, changed), directory)
            lines = index.lines
            at = index.first_pos(entry.filename)
            after = lines[at] if at is not None else (
                lines[found.index] if found.index < len(lines) else "undefined"
            )
            self._publish_index(directory, index)
            verb = "Pinned" if is_truthy(pin) else "Unpinned"
            return f'{verb} "{entry.name}".\nBefore: {before}\n After: {after}'

        try:
            return str(self._with_lock(self.get_memory_dir(), pin_entry))
        except LockBusy:
            return LOCK_BUSY_MESSAGE

    # --- recap retirement (S-RETIRE) ----------------------------------------------------

    def retire_recap_entries(self) -> None:
        """Drop unpinned ``last-session-recap.md`` lines from both indexes; never raises."""
        for directory in (self.paths.local_dir, self.paths.shared_dir):
            if not exists(self.fs, index_path(directory)):
                continue
            try:
                self._with_lock(directory, self._retire_in)
            except LockBusy:
                self.diag("recap cleanup deferred", LOCK_BUSY_MESSAGE)
            except Exception as e:
                self.diag("failed to retire last-session-recap index entries", e)

    def _retire_in(self, directory: str) -> None:
        index = self.index_engine.read(store_read(self.fs, index_path(directory)))
        kept = index.dropping(RECAP_FILENAME, _unpinned_recap)
        if len(kept.lines) == len(index.lines):
            return
        if self.is_shared(directory):
            add_tombstone(self.fs, directory, RECAP_FILENAME)
        self._publish_index(directory, kept)

    # --- display and search (S-DISP) ----------------------------------------------------

    def read_memory_index(self, max_lines: object = UNDEFINED) -> str | None:
        """S-DISP-1: the index text for injection, bounded and marked; never raises."""
        try:
            index = self.get_memory_index()
            if not exists(self.fs, index):
                return INITIAL_MEMORY
            if not is_regular_file(self.fs, index):
                self.diag("refusing to read unsafe MEMORY.md", "not a regular file")
                return None
            text, truncated = bounded_read(self.fs, index)
            pieces = text.split("\n")
            if truncated:
                return "\n".join(js_slice(pieces, 0, max_lines)) + SIZE_MARKER
            if max_lines is not UNDEFINED and len(pieces) > to_number(max_lines):
                return "\n".join(js_slice(pieces, 0, max_lines)) + (
                    f"\n\n<!-- memory truncated: MEMORY.md exceeds {to_string(max_lines)}"
                    "-line limit; shorten the index -->"
                )
            return text
        except Exception as e:
            self.diag("failed to read MEMORY.md", e)
            return None

    def read_index_entries(self) -> list[IndexEntry]:
        index = self.get_memory_index()
        if not is_regular_file(self.fs, index):
            return []
        text, _ = bounded_read(self.fs, index)
        return [
            IndexEntry(p.name, p.filename, find_date(p.rest) or "—", summary_of(p.rest), p.pinned, p.stale)
            for p in self.index_engine.read(text).entries()
        ]

    def read_topic_content(self, filename: object) -> str:
        from .index import is_safe_filename

        if not isinstance(filename, str) or not is_safe_filename(filename):
            return NOT_FOUND_TOPIC
        path = join(self.get_memory_dir(), filename)
        if not is_regular_file(self.fs, path):
            return NOT_FOUND_TOPIC
        text, truncated = bounded_read(self.fs, path)  # a post-probe open failure raises (JS)
        body = display_body(text)
        return body + TOPIC_SIZE_MARKER if truncated else body

    def search_memory(self, query: object) -> list[SearchHit]:
        from .index import is_safe_filename

        q = js_lower(require_string(query, "query"))
        hits: list[SearchHit] = []
        seen: set[str] = set()
        for e in self.read_index_entries():
            if q in js_lower(e.name) or q in js_lower(e.filename) or q in js_lower(e.summary):
                hits.append(SearchHit(e.name, e.filename, "index", e.summary or e.name))
                seen.add(e.filename)
        directory = self.get_memory_dir()
        if not exists(self.fs, directory):
            return hits
        for name in self.fs.scandir(directory):
            path = join(directory, name)
            if not is_safe_filename(name) or name in seen or not is_regular_file(self.fs, path):
                continue
            text, _ = bounded_read(self.fs, path)
            for piece in text.split("\n"):
                if q in js_lower(piece):
                    shown = name[:-3] if name.endswith(".md") else name
                    snippet = utf16_slice(trim(piece), 0, SNIPPET_LENGTH)
                    hits.append(SearchHit(shown, name, "body", snippet))
                    break
        return hits

    # --- handoff (S-HANDOFF), delegated ---------------------------------------------------

    def write_handoff(self, messages: object, reason: object = UNDEFINED, keep: object = 3) -> str:
        return handoff.write_handoff(self.context, messages, reason, keep)

    def replace_latest_handoff_with_compaction_summary(
        self, summary: object, reason: object = UNDEFINED, keep: object = 3
    ) -> str:
        return handoff.replace_latest(self.context, summary, reason, keep)

    def read_handoff(self) -> str:
        return handoff.read_handoff(self.context)


def _unpinned_recap(entry: IndexLine) -> bool:
    """S-RETIRE-3: a recap entry retires unless pinned; only the metadata part protects it."""
    return PIN_TOKEN not in entry.rest.split(" -- ")[0]


class _Write:
    """One ``write_memory`` call under the lock (S-WRITE-5..14), with its rollback."""

    def __init__(
        self,
        store: Store,
        topic: str,
        slug: str,
        content: str,
        summary: str,
        pin: bool,
        replace: bool,
    ) -> None:
        self.store, self.fs = store, store.fs
        self.topic, self.slug, self.content, self.summary = topic, slug, content, summary
        self.pin, self.replace = pin, replace

    def run(self, directory: str) -> str:
        fs, topic = self.fs, self.topic
        index = index_path(directory)
        raw = store_read(fs, index) if exists(fs, index) else INITIAL_MEMORY
        engine = self.store.index_engine
        read = engine.read(raw)
        filename = self._choose_filename(directory, read)
        path = join(directory, filename)
        if exists(fs, path) and not is_regular_file(fs, path):
            return f'Invalid topic: "{filename}" is not a regular file.'
        previous = store_read(fs, path) if exists(fs, path) else None
        clock = self.store.clock
        text = compose_topic(
            previous,
            topic,
            self.summary,
            self.content,
            self.replace,
            local_iso(clock.now_ms()),
            utc_date(clock.now_ms()),
        )
        shared = self.store.is_shared(directory)
        was_removed = shared and filename in read_tombstones(fs, directory)
        index_written = False
        try:
            atomic_write(fs, path, text)
            updated = read.upserted(filename, topic, self.summary, self.pin, self.store.now_iso())
            updated = self.store._maintain(updated, directory)
            atomic_write(fs, index, engine.publishing(updated))
            index_written = True
            if shared:
                clear_tombstone(fs, directory, filename)
        except Exception as err:
            try:
                if index_written:
                    atomic_write(fs, index, raw)
                if previous is not None:
                    atomic_write(fs, path, previous)
                elif exists(fs, path):
                    fs.unlink(path)
                if was_removed:
                    add_tombstone(fs, directory, filename)
            except Exception as rollback_err:
                raise AggregateJsError(
                    f"Memory update and rollback failed; inspect {path} and {index}.",
                    [err, rollback_err],
                ) from err
            raise
        verb = "Created" if previous is None else "Updated"
        return f'{verb} memory topic "{topic}" ({filename}).'

    def _choose_filename(self, directory: str, index: Index) -> str:
        """S-WRITE-6/7: the last entry with this name, else a free or self-named slug file."""
        fs, topic = self.fs, self.topic
        matched = index.file_named(topic)
        if matched is not None:
            return matched
        filename, base, n = self.slug + ".md", self.slug, 2
        while (indexed := (index.first_pos(filename) is not None)) or exists(fs, join(directory, filename)):
            path = join(directory, filename)
            if not indexed and is_regular_file(fs, path):
                text, _ = bounded_read(fs, path)
                if names_topic(text, topic):
                    return filename
            filename = f"{base}-{n}.md"
            n += 1
        return filename
