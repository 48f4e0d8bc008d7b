"""Corpus profiles (docs/ARCHITECTURE.md §7): which contract a run judges an implementation by.

``openpi`` is the whole of SPEC.md, result texts included (the reference and openpi-memory);
``shared-store`` is what every co-writer of ``~/.agents/memory/`` must do
(docs/SHARED_STORE.md).  A user's ``--scenarios`` folder may add its own profiles: a profile
is any name a selected scenario's ``profiles`` lists.  ``--profile`` chooses; without it the
implementation's kind does: ``opencode:`` is judged as a co-writer, ``pi:`` and ``python`` by
openpi's contract, and any other driver by what its ``hello`` declares (``profile``: a name,
or ``profiles``: a list, the first known one its default), else ``openpi``.  A driver that
declares only profiles no selected scenario names is refused, never judged by another.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..drivers.capabilities import PROFILE_BY_KIND
from ..drivers.peers import PeerSpec, start_driver
from .scenarios import PROFILES, Scenario

BY_KIND = PROFILE_BY_KIND


class ProfileError(Exception):
    """A profile asked for or declared that no selected scenario belongs to (exit 2)."""


def named(hello: Mapping[str, Any]) -> list[str]:
    """Every profile name a driver's ``hello`` gives (``profile`` first, then ``profiles``)."""
    one, many = hello.get("profile"), hello.get("profiles")
    names = [one] if isinstance(one, str) else []
    names += [n for n in many if isinstance(n, str)] if isinstance(many, list) else []
    return names


def known(scenarios: Sequence[Scenario]) -> set[str]:
    """The profiles a run can judge by: the built-in ones and those the scenarios name."""
    return set(PROFILES) | {p for sc in scenarios for p in sc.profiles}


def declared(hello: Mapping[str, Any], among: Collection[str] = PROFILES) -> str | None:
    """The profile a driver's ``hello`` declares: the first of its names that is ``among``
    the known ones; a driver naming profiles of which none is known is a ``ProfileError``."""
    names = named(hello)
    for name in names:
        if name in among:
            return name
    if names:
        raise ProfileError(f"the driver's hello declares profile(s) {', '.join(map(repr, names))}, which no selected "
                           "scenario belongs to (give the folder of its scenarios with --scenarios DIR)")
    return None


def _hello(spec: PeerSpec, timeout: float) -> Mapping[str, Any]:
    from ..drivers.sandbox import Sandbox

    sandbox = Sandbox.create()
    try:
        with start_driver(spec, sandbox.env(), cwd=str(sandbox.root), timeout=timeout) as driver:
            return dict(driver.hello)
    finally:
        sandbox.remove()


def default_profile(
    spec: PeerSpec, hello: Mapping[str, Any] | None = None, timeout: float = 10.0, among: Collection[str] = PROFILES
) -> str:
    """The profile a run of ``spec`` uses when ``--profile`` is not given."""
    if spec.kind in BY_KIND:
        return BY_KIND[spec.kind]
    return declared(hello if hello is not None else _hello(spec, timeout), among) or "openpi"


def select(scenarios: Sequence[Scenario], profile: str) -> list[Scenario]:
    """The scenarios that belong to ``profile``."""
    return [sc for sc in scenarios if profile in sc.profiles]
