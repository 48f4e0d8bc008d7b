"""One set of ``Fs`` test doubles: a recorder and an injector, for tests and machines alike.

The ``Fs`` seam (``reference/fs.py``) is how a test looks inside the store: every file and
process call passes through it, so one ``RecordingFs`` and one ``FaultFs`` serve the reference
tests (``tests/support.py``), the rollback machine and ``MemFs`` (which records ``Call`` too).
"""

from __future__ import annotations

import errno
import os
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

from memconform.reference.errors import NodeError
from memconform.reference.fs import Fs

T = TypeVar("T")
PathMatch = Callable[[str], bool]
Nth = int | Collection[int] | None

# Calls that take a descriptor: recorded with the descriptor, matched by the path it was opened on.
FD_CALLS = frozenset({"read", "pread", "write", "fsync", "close", "fstat"})
# Calls that take (src, dst): matched by, and named after, the destination.
TWO_PATH_CALLS = frozenset({"rename", "link"})
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT
_SYSCALL = {"pread": "read", "regular_names": "scandir"}  # as reference.fs names its failures
# How strace names a call it numbers per path (for faults exported as scenario injections).
_TRACED = {"open": "openat", "write": "write", "fsync": "fsync", "rename": "rename", "link": "link", "unlink": "unlink"}


class Call(tuple[Any, ...]):
    """One recorded call, ``(name, *args)``, compared as a plain tuple.

    ``path`` is the file the call acted on: the destination of a rename or link, the path a
    descriptor was opened on (known only at the time of the call, as descriptors are reused),
    ``None`` for ``kill``.  ``mutates``: the call changes the store (an open for writing,
    write, fsync, the close of a written descriptor, rename, link, unlink, mkdir).
    ``effect``: for ``MemFs``, the number of effects recorded before the call.  ``trace``:
    ``(strace syscall, path, nth call of it on that path in this Fs's life)``, or None.
    """

    path: str | None
    mutates: bool
    effect: int
    trace: tuple[str, str, int] | None

    def __new__(
        cls, name: str, args: tuple[Any, ...], path: str | None, *, mutates: bool = False, effect: int = 0
    ) -> Call:
        call = super().__new__(cls, (name, *args))
        call.path, call.mutates, call.effect, call.trace = path, mutates, effect, None
        return call

    @property
    def name(self) -> str:
        return str(self[0])

    @property
    def creates(self) -> bool:
        """An ``open`` with ``O_CREAT`` (a lock's creation, not its release read)."""
        return self[0] == "open" and len(self) > 2 and bool(self[2] & os.O_CREAT)


class RecordingFs(Fs):
    """Records every filesystem and process call as ``(name, *args)`` in ``calls``, in order.

    ``getpid`` and ``random_token`` are not recorded: they touch no file and cannot fail, and
    would only interleave every temporary-file sequence.
    """

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.fd_paths: dict[int, str] = {}
        self.fd_written: set[int] = set()  # descriptors opened for writing
        self.traced: Counter[tuple[str, str]] = Counter()

    # -- views --

    def names(self) -> list[str]:
        return [call[0] for call in self.calls]

    def named(self, *names: str) -> list[Call]:
        return [call for call in self.calls if call[0] in names]

    def mutating(self) -> list[Call]:
        return [call for call in self.calls if call.mutates]

    def paths(self, *names: str) -> list[tuple[str, str]]:
        """``(name, path)`` of the calls that act on a file (of ``names`` only, if given)."""
        return [
            (call[0], call.path)
            for call in self.calls
            if call.path is not None and (not names or call[0] in names)
        ]

    def resolved(self) -> list[tuple[Any, ...]]:
        """The calls with each descriptor replaced by the path it was opened on."""
        return [
            (call[0], call.path, *call[2:]) if call[0] in FD_CALLS else tuple(call)
            for call in self.calls
        ]

    def events(self) -> list[tuple[str, str]]:
        """``paths()`` with exclusive creations (lock taking, temporaries) as ``open-excl``."""
        return [
            ("open-excl" if call[0] == "open" and call[2] & os.O_EXCL else call[0], call.path)
            for call in self.calls
            if call.path is not None
        ]

    def mutated_paths(self) -> list[str]:
        """Every path created, renamed (either side), linked, unlinked or made a directory."""
        out: list[str] = []
        for call in self.calls:
            name = call[0]
            if name == "open" and call[2] & os.O_CREAT:
                out.append(call[1])
            elif name in TWO_PATH_CALLS:
                out.extend(call[1:3])
            elif name in ("unlink", "mkdir"):
                out.append(call[1])
        return out

    # -- the seam --

    def _target(self, name: str, args: tuple[Any, ...]) -> str | None:
        if name in FD_CALLS:
            return self.fd_paths.get(args[0])
        if name in TWO_PATH_CALLS:
            return str(args[1])
        if name == "kill":
            return None
        return str(args[0])

    def _mutates(self, name: str, args: tuple[Any, ...]) -> bool:
        if name == "open":
            return bool(args[1] & WRITE_FLAGS)
        if name == "close":
            return args[0] in self.fd_written
        return name in ("write", "fsync", "rename", "link", "unlink", "mkdir")

    def _before(self, call: Call) -> None:
        """Runs after recording, before the real call (FaultFs fails or hooks here)."""

    def _after(self, call: Call, result: object) -> None:
        if call[0] == "open":
            assert isinstance(result, int)
            self.fd_paths[result] = call[1]
            if call.mutates:
                self.fd_written.add(result)
            else:
                self.fd_written.discard(result)
        elif call[0] == "close":
            self.fd_written.discard(call[1])

    def _call(self, name: str, real: Callable[..., T], *args: Any) -> T:
        call = Call(name, args, self._target(name, args), mutates=self._mutates(name, args))
        traced = _TRACED.get(name)
        if traced is not None and call.path is not None:
            self.traced[(traced, call.path)] += 1
            call.trace = (traced, call.path, self.traced[(traced, call.path)])
        self.calls.append(call)
        self._before(call)
        result = real(*args)
        self._after(call, result)
        return result

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        return self._call("open", super().open, path, flags, mode)

    def read(self, fd: int, size: int) -> bytes:
        return self._call("read", super().read, fd, size)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return self._call("pread", super().pread, fd, size, offset)

    def write(self, fd: int, data: bytes) -> int:
        return self._call("write", super().write, fd, data)

    def fsync(self, fd: int) -> None:
        self._call("fsync", super().fsync, fd)

    def close(self, fd: int) -> None:
        self._call("close", super().close, fd)

    def fstat(self, fd: int) -> os.stat_result:
        return self._call("fstat", super().fstat, fd)

    def lstat(self, path: str) -> os.stat_result:
        return self._call("lstat", super().lstat, path)

    def stat(self, path: str) -> os.stat_result:
        return self._call("stat", super().stat, path)

    def rename(self, src: str, dst: str) -> None:
        self._call("rename", super().rename, src, dst)

    def link(self, src: str, dst: str) -> None:
        self._call("link", super().link, src, dst)

    def unlink(self, path: str) -> None:
        self._call("unlink", super().unlink, path)

    def mkdir(self, path: str) -> None:
        self._call("mkdir", super().mkdir, path)

    def scandir(self, path: str) -> list[str]:
        return self._call("scandir", super().scandir, path)

    def regular_names(self, path: str) -> set[str]:
        return self._call("regular_names", super().regular_names, path)

    def kill(self, pid: int, sig: int) -> None:
        self._call("kill", super().kill, pid, sig)


# --- fault injection -------------------------------------------------------------------------


@dataclass
class Fault:
    """One rule of a ``FaultFs``: the calls it watches and what it does to the chosen ones.

    It watches the calls named in ``methods`` (all, if None; only the store-changing ones with
    ``mutating``) on a path ``match`` accepts.  ``nth`` picks among the watched calls made
    since the rule was added (1 is the first; a collection picks several; ``None`` picks all).
    A chosen call fails with ``err`` worded as the real ``Fs`` words it, or runs ``run(path)``
    instead (after the real call if ``after``).
    """

    methods: frozenset[str] | None
    match: PathMatch | None = None
    nth: Nth = 1
    err: int = errno.EIO
    run: Callable[[str], object] | None = None
    after: bool = False
    mutating: bool = False
    seen: int = 0
    fired: int = 0

    def chooses(self, call: Call) -> bool:
        if self.methods is not None and call[0] not in self.methods:
            return False
        if self.mutating and not call.mutates:
            return False
        if self.match is not None and not self.match(call.path or ""):
            return False
        self.seen += 1
        nth = self.nth
        chosen = nth is None or (self.seen == nth if isinstance(nth, int) else self.seen in nth)
        self.fired += chosen
        return chosen


def node_error(call: Call, err: int) -> NodeError:
    """The error the real ``Fs`` raises for ``call`` (descriptor calls name no path)."""
    name = call[0]
    syscall = _SYSCALL.get(name, name)
    if name in TWO_PATH_CALLS:
        return NodeError(err, syscall, call[1], call[2])
    if name in FD_CALLS or name == "kill":
        return NodeError(err, syscall)
    return NodeError(err, syscall, call[1])


class FaultFs(RecordingFs):
    """A recording ``Fs`` that fails, or runs a callback at, chosen calls.

    ``fired`` lists each failed call with its errno.  A failing ``close`` still releases the
    descriptor, as on Linux.
    """

    def __init__(self) -> None:
        super().__init__()
        self.faults: list[Fault] = []
        self.fired: list[tuple[Call, int]] = []

    def fail(
        self,
        *methods: str,
        err: int = errno.EIO,
        nth: Nth = 1,
        match: PathMatch | None = None,
        mutating: bool = False,
    ) -> Fault:
        """Fail the ``nth`` call of ``methods`` (any, if none; store-changing ones only with
        ``mutating``) on a path ``match`` accepts, with ``err``."""
        fault = Fault(frozenset(methods) if methods else None, match, nth, err, mutating=mutating)
        self.faults.append(fault)
        return fault

    def hook(
        self,
        *methods: str,
        run: Callable[[str], object],
        nth: Nth = 1,
        match: PathMatch | None = None,
        after: bool = False,
    ) -> Fault:
        """Run ``run(path)`` at the ``nth`` call of ``methods``: before it, or ``after`` it."""
        fault = Fault(frozenset(methods), match, nth, run=run, after=after)
        self.faults.append(fault)
        return fault

    def _before(self, call: Call) -> None:
        # every rule counts the call, even one that an earlier rule fails
        for fault in [f for f in self.faults if not f.after and f.chooses(call)]:
            if fault.run is None:
                self.fired.append((call, fault.err))
                if call[0] == "close":
                    Fs.close(self, call[1])
                    self.fd_written.discard(call[1])
                raise node_error(call, fault.err)
            fault.run(call.path or "")

    def _after(self, call: Call, result: object) -> None:
        super()._after(call, result)
        for fault in self.faults:
            if fault.after and fault.run is not None and fault.chooses(call):
                fault.run(call.path or "")
