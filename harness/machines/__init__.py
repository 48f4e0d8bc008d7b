"""Hypothesis state machines that attack the store (DESIGN.md §5).

``store_model`` (the reference vs the shadow, the exact SPEC-written store; module
``store_shadow``), ``rollback`` (faults at every mutating ``Fs`` call), ``lock_protocol``
(logical lock holders), ``session`` (S-INJECT's injection state machine) and ``differential``
(reference vs a peer through the protocol).  The registered names are what ``fuzz --machine``,
exported regressions and rerun commands use, so they stay when a module is renamed.  Each records its steps as a
scenario and exports the shrunk failing example as a regression (``base``, ``export``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Machine

MACHINES: dict[str, str] = {
    "store_model": "store_shadow:StoreShadowMachine",
    "rollback": "rollback:RollbackMachine",
    "lock_protocol": "lock_protocol:LockProtocolMachine",
    "session": "session:SessionMachine",
    "differential": "differential:DifferentialMachine",
}
IN_PROCESS = ("store_model", "rollback", "lock_protocol", "session")
"""The machines that run the reference in process (the differential one needs a peer)."""


def load(name: str) -> type[Machine]:
    """The machine class registered under ``name``."""
    if name not in MACHINES:
        raise KeyError(f"unknown machine {name!r} (known: {', '.join(MACHINES)})")
    module, cls = MACHINES[name].split(":")
    machine: type[Machine] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    return machine
