"""What goes wrong: strace kill / errno / delay injection, the in-memory filesystem and its
persistence models, the op-case catalogue, the crash explorer and the campaigns built on them.

Nothing here is imported by a plain conformance run: the runner reaches for ``strace`` only
when a scenario carries a fault.  This package module holds the constants every fault module
shares, and imports nothing heavy (no strace, no explorer).
"""

from __future__ import annotations

import errno as _errno

from memconform.reference.clock import parse_instant

from ..gate.scenarios import DEFAULT_NOW

NOW = DEFAULT_NOW  # the fixed instant every faulted run pins its clock to
NOW_MS = parse_instant(NOW)
ERRNOS: dict[str, int] = {  # the errors injected by ``--errors``, in and out of process
    "ENOSPC": _errno.ENOSPC,
    "EIO": _errno.EIO,
    "EACCES": _errno.EACCES,
    "EINTR": _errno.EINTR,
}
MODELS = ("strict", "lost-dirent", "torn")  # the persistence models of harness.faults.memfs
