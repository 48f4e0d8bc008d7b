"""Hypothesis state machines that attack the store (docs/ARCHITECTURE.md §5).

``store_model`` (the reference vs the shadow, the exact SPEC-written store; module
``store_shadow``), ``rollback`` (faults at every mutating ``Fs`` call), ``lock_holders``
(logical lock holders in process), ``lock_protocol`` (any implementation's real writers under
the syscall scheduler, Hypothesis drawing the schedule), ``session`` (S-INJECT's injection state machine) and ``differential``
(reference vs a peer through the protocol) and ``shared_store`` (any co-writer, OpenCode
included, judged by the shared-store contract).  Each module's ``bind(spec, ops)`` makes its
machine drive the named implementation or returns the one-line reason it cannot, so ``fuzz``
never runs the reference while naming a peer.  The registered names are what ``fuzz --machine``,
exported regressions and rerun commands use, so they stay when a module is renamed.  Each records its steps as a
scenario and exports the shrunk failing example as a regression (``base``, ``export``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from ..hosts.script import HOST_KINDS

if TYPE_CHECKING:
    from ..drivers.peers import PeerSpec
    from ..hosts.run import HostSpec
    from .base import Machine

MACHINES: dict[str, str] = {
    "store_model": "store_shadow:StoreShadowMachine",
    "rollback": "rollback:RollbackMachine",
    "lock_holders": "lock_holders:LockHoldersMachine",
    "lock_protocol": "lock_protocol:LockProtocolMachine",
    "session": "session:SessionMachine",
    "differential": "differential:DifferentialMachine",
    "shared_store": "shared_store:SharedStoreMachine",
}
IN_PROCESS = ("store_model", "rollback", "lock_holders", "session")
"""The machines that run the reference in process (the differential one needs a peer)."""


def _module(name: str) -> ModuleType:
    if name not in MACHINES:
        raise KeyError(f"unknown machine {name!r} (known: {', '.join(MACHINES)})")
    return importlib.import_module(f"{__name__}.{MACHINES[name].split(':')[0]}")


def bind(name: str, spec: PeerSpec | HostSpec, ops: frozenset[str], *, timeout: float = 15.0) -> str | None:
    """Point machine ``name`` at ``spec``; None when it will drive it, else why it cannot."""
    module = _module(name)
    if spec.kind in HOST_KINDS and not getattr(module, "DRIVES_HOSTS", False):
        return "its steps are store ops; a host (pi-host:, opencode-host:) runs only the session machine's host actions"
    fn: Callable[..., str | None] = module.bind
    return fn(spec, ops, timeout=timeout)


def unbind() -> None:
    """Back to the defaults (the reference in process, the environment's peer); drivers closed."""
    from . import differential, lock_protocol, session, store_shadow, targets

    session.unbind()
    store_shadow.StoreShadowMachine.target_spec = None
    differential.configure_peer(None)
    differential._Pool.close()
    targets.Pool.close()
    lock_protocol.unbind()


def load(name: str) -> type[Machine]:
    """The machine class registered under ``name``."""
    module = _module(name)
    bound: Callable[[], type[Machine] | None] = getattr(module, "bound_machine", lambda: None)
    machine: type[Machine] = bound() or getattr(module, MACHINES[name].split(":")[1])
    return machine
