"""The reference's ``serve`` with crash defects planted (issue 30 item 1), for
``planted_crash_driver.mjs``; MEMCONFORM_PLANT names them (comma-separated):

- ``in-place``: store files are rewritten in place (open with O_TRUNC, write) instead of
  through a temporary and a rename (SS-IO-1): a kill between the truncate and the write
  leaves an empty or cut-off index or topic;
- ``tombstone-after-index``: a shared removal publishes the index first and records the
  tombstone after it (SS-TOMB-1, S-INV-8 3): a kill between the two leaves a removed topic
  neither indexed nor tombstoned, which repair or another tool's carry-over brings back.

Only what the plant names changes; everything else is the reference.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from memconform.reference import store as store_module
from memconform.reference.fs import Fs
from memconform.reference.serve import serve

PLANT = set(filter(None, os.environ.get("MEMCONFORM_PLANT", "").split(",")))


def in_place(fs: Fs, target: str, content: str) -> None:
    """The defect: truncate the target and write it, no temporary, no rename."""
    fd = fs.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(content.encode("utf-8"))
        while view:
            view = view[fs.write(fd, bytes(view)):]
    finally:
        fs.close(fd)


def plant_tombstone_after_index() -> None:
    pending: list[tuple[Any, ...]] = []
    real_add, real_publish = store_module.add_tombstone, store_module.Store._publish_index

    def later(*args: Any) -> None:
        pending.append(args)

    def publish_then_tombstone(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real_publish(self, *args, **kwargs)
        while pending:
            real_add(*pending.pop(0))
        return out

    store_module.add_tombstone = later  # type: ignore[assignment]
    store_module.Store._publish_index = publish_then_tombstone  # type: ignore[method-assign]


if "in-place" in PLANT:
    store_module.atomic_write = in_place  # type: ignore[assignment]
if "tombstone-after-index" in PLANT:
    plant_tombstone_after_index()

if __name__ == "__main__":
    sys.exit(serve())
