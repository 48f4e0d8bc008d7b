"""Shared-dir carry-over: the one-time merge of the local store into ``SHARED_DIR``.

S-MIGRATE-1..6: single lock attempts on both directories, copy-never-overwrite, ``-opim``
suffixes for different content, the sentinel only after a complete merge.  Carry-over never
raises: a failure is a diagnostic and the caller still gets the shared directory.
"""

from __future__ import annotations

from .context import StoreContext
from .errors import JsError
from .fs import atomic_write, exists, is_regular_file, store_read
from .index import INITIAL_MEMORY, parse_index_line
from .lock import release, try_acquire
from .paths import index_path, join, lock_path
from .text import replace_first_with_patterns, trim_end
from .tombstones import read_tombstones

SUFFIX = "-opim"


def run(ctx: StoreContext) -> bool:
    """One carry-over attempt; True when it is done (now or by an earlier run)."""
    fs, clock, paths = ctx.fs, ctx.clock, ctx.paths
    if exists(fs, paths.carry_over_sentinel):
        return True
    if not exists(fs, index_path(paths.local_dir)):
        return False
    local_lock, shared_lock = lock_path(paths.local_dir), lock_path(paths.shared_dir)
    local_token: str | None = None
    try:
        local_token = try_acquire(fs, clock, local_lock)
        if local_token is None:
            return False
        fs.mkdir(paths.shared_dir)
        shared_token = try_acquire(fs, clock, shared_lock)
        if shared_token is None:
            return False
        try:
            merge(ctx, paths.local_dir, paths.shared_dir)
            atomic_write(fs, paths.carry_over_sentinel, "")
        finally:
            release(fs, shared_lock, shared_token)
        return True
    except Exception as e:
        ctx.diag("shared_dir carry-over failed", e)
        return False
    finally:
        if local_token is not None:
            release(fs, local_lock, local_token)


def merge(ctx: StoreContext, local: str, shared: str) -> None:
    """S-MIGRATE-3: copy indexed local topics in, append their lines to the shared index."""
    fs = ctx.fs
    shared_index = index_path(shared)
    sraw = store_read(fs, shared_index) if exists(fs, shared_index) else INITIAL_MEMORY
    on_disk = set(fs.scandir(shared))
    shared_indexed = {p.filename for p in map(parse_index_line, sraw.split("\n")) if p}
    local_lines = store_read(fs, index_path(local)).split("\n")
    removed = set(read_tombstones(fs, local)) | set(read_tombstones(fs, shared))
    queued: list[str] = []
    for line in local_lines:
        p = parse_index_line(line)
        if p is None or p.filename in removed:
            continue
        source = join(local, p.filename)
        if not is_regular_file(fs, source):
            continue
        dest = destination(ctx, local, shared, p.filename, on_disk)
        if dest in removed:
            continue
        if dest not in on_disk:
            atomic_write(fs, join(shared, dest), store_read(fs, source))
            on_disk.add(dest)
        if dest not in shared_indexed:
            queued.append(replace_first_with_patterns(line, f"]({p.filename})", f"]({dest})"))
            shared_indexed.add(dest)
    if queued:
        atomic_write(fs, shared_index, trim_end(sraw) + "\n" + "\n".join(queued) + "\n")
    elif not exists(fs, shared_index):
        atomic_write(fs, shared_index, sraw)


def _identical(ctx: StoreContext, a: str, b: str) -> bool:
    fs = ctx.fs
    return (
        is_regular_file(fs, a)
        and is_regular_file(fs, b)
        and store_read(fs, a) == store_read(fs, b)
    )


def destination(ctx: StoreContext, local: str, shared: str, name: str, on_disk: set[str]) -> str:
    """S-MIGRATE-4: the name itself, ``-opim``, or the first free ``-opim-N``."""
    if name not in on_disk or _identical(ctx, join(local, name), join(shared, name)):
        return name
    if not name.endswith(".md"):
        # the JS core spins forever here while holding both locks; we give up.
        raise JsError(f"cannot derive a carry-over name for {name}: extension is not '.md'")
    base = name[:-3]
    first = f"{base}{SUFFIX}.md"
    if first not in on_disk or _identical(ctx, join(local, name), join(shared, first)):
        return first
    n = 2
    while f"{base}{SUFFIX}-{n}.md" in on_disk:
        n += 1
    return f"{base}{SUFFIX}-{n}.md"
