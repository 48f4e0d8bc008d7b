"""``WatchingFs``: an ``Fs`` that knows which names are regular files from inotify (S-IO-1, S-IDX-4).

Maintenance asks "is this entry's file regular?" for every index entry.  One listing per
write answers that without a syscall per entry, but the kernel still walks every entry: about
0.3 ms at 1,000 entries on ext4, half of what the unavoidable part of a write costs.  On
Linux a watch says which names changed since the last look, and only those are probed again.

The answer is the one a listing made at the same moment would give: a name changes kind only
through a create, delete or rename in its directory, and each queues its event before the
syscall returns.  Wherever the watch cannot vouch for that (no inotify, a filesystem other
hosts may write, a full event queue, the directory replaced, a probe that fails for another
reason than a missing name) the caller lists, exactly as before.

A speed path, so a choice made at the edge: ``serve``, the CLI and the bench build a
``WatchingFs`` (unless ``MEMCONFORM_DIRWATCH=0``, see ``reference.edge``); a ``Store`` alone
uses the plain ``Fs``, which lists every time.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import sys
import threading
from dataclasses import dataclass, field

from .fs import Fs, list_regular

IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
_MASK = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
_APPEARED = IN_CREATE | IN_MOVED_TO  # otherwise (IN_DELETE, IN_MOVED_FROM) the name is gone
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()  # os.fsdecode

# Filesystems whose every change, from any process on this host, reaches the watch, and that
# no other host writes: ext2/3/4, xfs, btrfs, tmpfs, f2fs.  Not NFS, SMB, FUSE or overlayfs
# (whose lower layers change behind the watch).
_LOCAL_FS = frozenset({0xEF53, 0x58465342, 0x9123683E, 0x01021994, 0xF2F52010})
_EVENT = struct.Struct("iIII")
_BUFFER = 64 * 1024
_NAME_ROOM = _EVENT.size + 256  # the largest event: a header and NAME_MAX + 1, padded
_KEEP = 32  # directories watched at once; the least recently asked is dropped


@dataclass(eq=False)
class _Watch:
    wd: int
    identity: tuple[int, int]  # (st_dev, st_ino) of the directory when watched
    regular: set[str]
    dirty: set[bytes] = field(default_factory=set)  # names to probe: created or moved here
    valid: bool = True


class DirWatcher:
    """One inotify instance per process, a watch per recently asked directory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._libc: ctypes.CDLL | None = None
        self._fd = -1
        self._by_path: dict[str, _Watch] = {}
        self._by_wd: dict[int, _Watch] = {}
        self._remote: set[int] = set()  # st_dev of filesystems the watch cannot vouch for
        self._broken = not sys.platform.startswith("linux")
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """A forked child must not read its parent's queue: start over, lazily."""
        self._lock = threading.Lock()
        self.close()

    def close(self) -> None:
        """Give the inotify instance back (a user has 128); the next question starts anew."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = -1
        self._by_path.clear()
        self._by_wd.clear()

    def regular_names(self, path: str) -> set[str] | None:
        """The live set of regular names in ``path``, or None: then list.

        The set belongs to the watcher and is valid until its next call.
        """
        if self._broken:
            return None
        with self._lock:
            try:
                return self._regular_names(path)
            except OSError:
                return None

    def _regular_names(self, path: str) -> set[str] | None:
        st = os.stat(path)
        identity = (st.st_dev, st.st_ino)
        if st.st_dev in self._remote or not self._start():
            return None
        self._drain()
        held = self._by_path.get(path)
        if held is not None and held.valid and held.identity == identity:
            self._by_path[path] = self._by_path.pop(path)  # most recently asked last
            watch: _Watch | None = held
        else:
            watch = self._watch(path, identity)
        if watch is None:
            return None
        return watch.regular if self._probe(path, watch) else None

    # --- the instance ---------------------------------------------------------------------

    def _start(self) -> bool:
        if self._fd >= 0:
            return True
        try:
            libc = ctypes.CDLL(None, use_errno=True)  # the process's own libc
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            fd = -1
        if fd < 0:
            self._broken = True
            return False
        self._libc, self._fd = libc, fd
        return True

    def _local(self, path: str) -> bool:
        assert self._libc is not None
        buf = ctypes.create_string_buffer(256)  # struct statfs; f_type is its first word
        if self._libc.statfs(os.fsencode(path), buf) != 0:
            return False
        return (struct.unpack_from("l", buf.raw)[0] & 0xFFFFFFFF) in _LOCAL_FS

    def _watch(self, path: str, identity: tuple[int, int]) -> _Watch | None:
        """Watch, then list: a change between the two is in the queue and gets probed."""
        assert self._libc is not None
        old = self._by_path.pop(path, None)
        if old is not None:
            self._drop(old)
        if not self._local(path):
            self._remote.add(identity[0])
            return None
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), _MASK)
        if wd < 0:
            return None
        watch = self._by_wd.get(wd)  # the same directory asked under another path
        if watch is None or not watch.valid or watch.identity != identity:
            watch = _Watch(wd, identity, list_regular(path))
            self._by_wd[wd] = watch
        self._by_path[path] = watch
        while len(self._by_path) > _KEEP:
            self._drop(self._by_path.pop(next(iter(self._by_path))))
        return watch

    def _drop(self, watch: _Watch) -> None:
        if any(other is watch for other in self._by_path.values()):
            return  # still asked for under another path
        assert self._libc is not None
        self._by_wd.pop(watch.wd, None)
        self._libc.inotify_rm_watch(self._fd, watch.wd)

    # --- events ---------------------------------------------------------------------------

    def _drain(self) -> None:
        """Apply every queued event: a short read means the queue was empty."""
        while True:
            try:
                data = os.read(self._fd, _BUFFER)
            except BlockingIOError:
                return
            self._apply(data)
            if len(data) <= _BUFFER - _NAME_ROOM:
                return

    def _apply(self, data: bytes) -> None:
        """Note each event's name: appeared (probe it later) or gone (not regular now)."""
        by_wd, unpack, head = self._by_wd, _EVENT.unpack_from, _EVENT.size
        at, end = 0, len(data)
        while at < end:
            wd, mask, _cookie, size = unpack(data, at)
            start, at = at + head, at + head + size
            if mask & IN_Q_OVERFLOW:
                for each in by_wd.values():
                    each.valid = False
                continue
            watch = by_wd.get(wd)
            if watch is None:
                continue
            if mask & _GONE:
                watch.valid = False
                continue
            name = data[start:at].rstrip(b"\0")
            if mask & _APPEARED:
                watch.dirty.add(name)
            else:
                watch.dirty.discard(name)
                watch.regular.discard(name.decode(_FS_ENCODING, _FS_ERRORS))

    def _probe(self, path: str, watch: _Watch) -> bool:
        """``lstat`` each name that appeared since the last look; False: list instead."""
        base = os.fsencode(path) + b"/"
        # in name order: a set's order moves with the hashes of the temporaries' random names,
        # and a scheduled replay (issue 24) needs the same calls in the same order every run
        for name in sorted(watch.dirty):
            try:
                regular = stat.S_ISREG(os.lstat(base + name).st_mode)
            except OSError as e:
                if e.errno != errno.ENOENT:
                    watch.valid = False
                    return False
                regular = False
            decoded = name.decode(_FS_ENCODING, _FS_ERRORS)
            if regular:
                watch.regular.add(decoded)
            else:
                watch.regular.discard(decoded)
        watch.dirty.clear()
        return watch.valid


WATCHER = DirWatcher()


class WatchingFs(Fs):
    """The plain ``Fs`` whose ``regular_names`` asks a directory watch first.

    Same answers as a listing (the tests compare them after every kind of change); where the
    watch cannot vouch for a directory, the listing answers, errors included.
    """

    def __init__(self, watcher: DirWatcher | None = None) -> None:
        self.watcher = WATCHER if watcher is None else watcher

    def regular_names(self, path: str) -> set[str]:
        known = self.watcher.regular_names(path)
        return known if known is not None else super().regular_names(path)
