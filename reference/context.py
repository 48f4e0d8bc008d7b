"""``StoreContext``: the part of a ``Store`` that carry-over and handoff use.

They need where the files are, the ``Fs`` and clock to reach them through, and the diagnostic
channel; handing them the whole ``Store`` made ``store`` and those modules import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .clock import Clock, local_iso
from .fs import Fs
from .paths import StorePaths


@dataclass(frozen=True)
class StoreContext:
    """Paths, seams and the diagnostic line of one store, at the moment it was asked for."""

    fs: Fs
    clock: Clock
    paths: StorePaths
    diag: Callable[[str, object], None]  # S-ERR-5: context, then the error or message

    def now_iso(self) -> str:
        return local_iso(self.clock.now_ms())
