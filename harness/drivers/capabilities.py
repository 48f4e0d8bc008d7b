"""What a driver declared it can do, read from its ``hello`` in one place (issue 32).

A command that sends a request the driver did not declare gets a refusal and, if it judges
that refusal, a false verdict on a correct implementation (``races`` sent ``reset`` with an
environment to a driver without ``reset_env`` and reported the writes it never saw as lost).
So every command reads the declaration here, before it starts, and for each thing it needs
either adapts (a fresh driver instead of ``reset`` with an env; real or offset time instead of
virtual), refuses in one line naming what is missing (:class:`Missing`, exit 2), or skips that
part with the reason in its report (:class:`NotRun`).

The declaration (protocol.schema.json ``$defs/hello``), with the defaults of an absent field:

- ``ops``: the ops offered (``hello`` always);
- ``reset_env`` (false): ``reset`` takes ``args.env`` as a fresh process would;
- ``clock_modes`` (``frozen``, ``offset``): ``virtual`` lets the driver's waits cost no wall time;
- ``outcome_kinds`` (false): store ops answer with an ``outcome`` judged instead of the text;
- ``profile``: the contract it is judged by;
- ``local_store`` (true): the tool keeps a private local store it carries over into the
  shared one (SS-CARRY); ``false``: it keeps none and carries nothing over;
- ``carry_tag``: its own carry-over suffix (SS-CARRY-2); absent: ``oclm`` for OpenCode's
  driver, ``opim`` (openpi's) otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..oracles.shared_checks import CARRY_TAGS
from .peers import PeerUnavailable

DEFAULT_CLOCK_MODES = ("frozen", "offset")
PROFILE_BY_KIND = {"python": "openpi", "pi": "openpi", "opencode": "shared-store"}
"""The contract a built-in driver kind is judged by, whatever it declares (docs/ARCHITECTURE.md §7)."""
DEFAULT_CARRY_TAG = "opim"  # openpi's (S-MIGRATE-4); OpenCode's driver: CARRY_TAGS
TAG = re.compile(r"[a-z0-9]+")
STORE_OPS = ("write_memory", "remove_memory", "pin_memory")
"""The co-writer ops (docs/IMPLEMENTING.md): every command that writes a store needs them."""

# What each command needs before it starts (docs/IMPLEMENTING.md, "What each command needs").
COMMAND_OPS: Mapping[str, tuple[str, ...]] = {
    "conformance": (),  # each scenario names its own ops; one lacking them is skipped
    "races": ("write_memory",),  # every situation writes; one needing remove or pin is not run without it
    "locks": ("write_memory",),
    "interop": STORE_OPS,
    "crash": ("set_clock",),  # and each op case its own op (a case whose op is missing is not run)
    "replay": (),  # the file names its ops
    "fuzz": (),  # each machine names its own (refused per machine)
}


class Missing(PeerUnavailable):
    """A command cannot run on a driver that lacks what it needs: one line, exit 2."""


@dataclass(frozen=True)
class NotRun:
    """A part of a command that did not run for a capability the driver lacks."""

    what: str  # the scenario, situation, cell or machine
    why: str  # the missing capability, in one phrase
    clauses: tuple[str, ...] = ()  # the clauses it would have judged

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "why": self.why, "clauses": list(self.clauses)}


@dataclass(frozen=True)
class Capabilities:
    """A driver's declared capabilities, defaults filled in."""

    name: str  # the implementation as given (``node:/path``), for messages
    ops: frozenset[str]
    reset_env: bool = False
    clock_modes: frozenset[str] = frozenset(DEFAULT_CLOCK_MODES)
    outcome_kinds: bool = False
    profile: str | None = None
    local_store: bool = True
    carry_tag: str = DEFAULT_CARRY_TAG
    kind: str = ""  # python, pi, opencode, node

    @property
    def contract(self) -> str:
        """The profile it is judged by by default: its kind's, else the one it declares, else openpi."""
        return PROFILE_BY_KIND.get(self.kind) or self.profile or "openpi"

    @property
    def virtual(self) -> bool:
        """Its waits can run on a virtual clock (no wall time, exact timings)."""
        return "virtual" in self.clock_modes

    def lacking(self, ops: Iterable[str]) -> list[str]:
        """The ops of ``ops`` it does not offer, sorted."""
        return sorted(set(ops) - self.ops)

    def fresh_by_reset(self, with_env: bool) -> bool:
        """A ``reset`` gives a fresh-process state (with a new environment when ``with_env``);
        otherwise the caller starts a fresh driver."""
        return "reset" in self.ops and (self.reset_env or not with_env)

    def declared(self) -> dict[str, Any]:
        """What a report shows of it."""
        return {"ops": sorted(self.ops), "reset_env": self.reset_env, "clock_modes": sorted(self.clock_modes),
                "outcome_kinds": self.outcome_kinds, "profile": self.profile, "local_store": self.local_store,
                "carry_tag": self.carry_tag if self.local_store else None}


def of(hello: Mapping[str, Any], name: str = "", kind: str = "") -> Capabilities:
    """The capabilities ``hello`` declares; ``kind`` (python, pi, opencode, node) picks the
    default carry-over tag of a driver that names none."""
    ops = hello.get("ops")
    modes = hello.get("clock_modes")
    profile = hello.get("profile")
    tag = hello.get("carry_tag")
    return Capabilities(
        name=name,
        ops=frozenset(o for o in ops if isinstance(o, str)) if isinstance(ops, list) else frozenset({"hello"}),
        reset_env=hello.get("reset_env") is True,
        clock_modes=frozenset(m for m in modes if isinstance(m, str)) if isinstance(modes, list)
        else frozenset(DEFAULT_CLOCK_MODES),
        outcome_kinds=hello.get("outcome_kinds") is True,
        profile=profile if isinstance(profile, str) and profile else None,
        local_store=hello.get("local_store") is not False,
        carry_tag=tag if isinstance(tag, str) and TAG.fullmatch(tag) else CARRY_TAGS.get(kind, DEFAULT_CARRY_TAG),
        kind=kind,
    )


def require_ops(caps: Capabilities, needed: Iterable[str], command: str) -> None:
    """Refuse ``command`` up front, naming the first op ``caps`` lacks (exit 2)."""
    missing = caps.lacking(needed)
    if missing:
        every = ", ".join(sorted(set(needed)))
        raise Missing(f"{command} needs op {missing[0]} ({caps.name} does not declare it in hello; "
                      f"{command} needs {every}: docs/IMPLEMENTING.md, \"What each command needs\")")


def require_command(caps: Capabilities, command: str) -> None:
    """``require_ops`` with the command's own list (:data:`COMMAND_OPS`)."""
    require_ops(caps, COMMAND_OPS.get(command, ()), command)


def cited(text: str) -> tuple[str, ...]:
    """The clause ids a description cites, in order (a race situation's ``why``)."""
    return tuple(dict.fromkeys(re.findall(r"\b(?:SS|S)-[A-Z]+-\d+", text)))


def carry_applies(caps: Capabilities) -> str | None:
    """None when carry-over scenarios apply to the tool, else why not (a skip, never a finding)."""
    if caps.local_store:
        return None
    return "not applicable: the driver declares no local store (local_store: false), so it carries nothing over"


def clause_prefixes(profile: str) -> tuple[str, ...]:
    """The clause ids a report lists as unjudged for ``profile``: SS- always, S- under openpi."""
    return ("SS-", "S-") if profile == "openpi" else ("SS-",)


def unjudged(ran: Iterable[Iterable[str]], skipped: Iterable[tuple[Iterable[str], str]],
             prefixes: tuple[str, ...]) -> dict[str, str]:
    """Clauses that skipped parts would have judged and no part that ran did: clause -> why.

    ``ran``: the clause lists of what executed; ``skipped``: (clauses, why) of what did not."""
    judged = {c for clauses in ran for c in clauses}
    out: dict[str, set[str]] = {}
    for clauses, why in skipped:
        for c in clauses:
            if c.startswith(prefixes) and c not in judged:
                out.setdefault(c, set()).add(why)
    return {c: "; ".join(sorted(out[c])) for c in sorted(out, key=_clause_key)}


def _clause_key(clause: str) -> tuple[str, int]:
    head, _, tail = clause.rpartition("-")
    return (head, int(tail) if tail.isdigit() else 0)


def coverage_section(caps: Capabilities | None, not_run: Iterable[NotRun], profile: str,
                     ran: Iterable[Iterable[str]] = ()) -> dict[str, Any]:
    """The report's ``capabilities`` section: what was declared, what did not run and why, and
    the clauses no executed part judged because of it."""
    parts = list(not_run)
    return {
        "declared": caps.declared() if caps is not None else None,
        "not_run": [p.to_json() for p in parts],
        "unjudged_clauses": unjudged(ran, [(p.clauses, p.why) for p in parts], clause_prefixes(profile)),
    }


def say_not_run(command: str, not_run: Iterable[NotRun], most: int = 6) -> None:
    """One line per part that did not run (the first ``most``), so the run log says it too."""
    parts = list(not_run)
    for p in parts[:most]:
        print(f"memconform {command}: not run: {p.what}: {p.why}", flush=True)
    if len(parts) > most:
        print(f"memconform {command}: not run: {len(parts) - most} more (listed in the JSON report)", flush=True)


def of_impl(info: Any) -> Capabilities:
    """The capabilities of a preflighted implementation (``reports.envelope.ImplInfo``)."""
    spec = str(getattr(info, "spec", ""))
    return of(getattr(info, "hello", {}) or {}, spec, spec.partition(":")[0])


def script_needs(caps: Capabilities, ops: Iterable[str], *, clock_moves: str = "advance_clock") -> str | None:
    """Why a scripted run (a race situation: each writer's op names) cannot run on ``caps``, or
    None.  ``clock_moves`` is the pseudo-op that moves a writer's clock on between its ops: only a
    virtual clock does that without waiting, and an offset clock would age the writer's own
    fresh locks in its co-writers' eyes (a false reclaim), so it is not a stand-in."""
    names = set(ops)
    if clock_moves in names and not caps.virtual:
        return (f"needs clock_modes virtual (a writer's clock moves on between its ops); {caps.name or 'the driver'} "
                f"declares {', '.join(sorted(caps.clock_modes))}")
    missing = caps.lacking(names - {clock_moves})
    return f"driver lacks op(s) {', '.join(missing)}" if missing else None
