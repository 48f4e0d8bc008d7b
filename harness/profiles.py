"""Corpus profiles (docs/ARCHITECTURE.md §7): which contract a run judges an implementation by.

``openpi`` is the whole of SPEC.md, result texts included (the reference and openpi-memory);
``shared-store`` is what every co-writer of ``~/.agents/memory/`` must do
(docs/SHARED_STORE.md).  ``--profile`` chooses; without it the implementation's kind does:
``opencode:`` is judged as a co-writer, ``pi:`` and ``python`` by openpi's contract, and any
other driver by what its ``hello`` declares (``profile``: a name, or ``profiles``: a list,
the first one its default), else ``openpi``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .peers import PeerSpec, start_driver
from .scenarios import PROFILES, Scenario

BY_KIND = {"python": "openpi", "pi": "openpi", "opencode": "shared-store"}


def declared(hello: Mapping[str, Any]) -> str | None:
    """The profile a driver's ``hello`` declares (``profile``, or the first of ``profiles``)."""
    one = hello.get("profile")
    if isinstance(one, str) and one in PROFILES:
        return one
    many = hello.get("profiles")
    if isinstance(many, list):
        for name in many:
            if isinstance(name, str) and name in PROFILES:
                return name
    return None


def _hello(spec: PeerSpec, timeout: float) -> Mapping[str, Any]:
    from .sandbox import Sandbox

    sandbox = Sandbox.create()
    try:
        with start_driver(spec, sandbox.env(), cwd=str(sandbox.root), timeout=timeout) as driver:
            return dict(driver.hello)
    finally:
        sandbox.remove()


def default_profile(spec: PeerSpec, hello: Mapping[str, Any] | None = None, timeout: float = 10.0) -> str:
    """The profile a run of ``spec`` uses when ``--profile`` is not given."""
    if spec.kind in BY_KIND:
        return BY_KIND[spec.kind]
    return declared(hello if hello is not None else _hello(spec, timeout)) or "openpi"


def select(scenarios: Sequence[Scenario], profile: str) -> list[Scenario]:
    """The scenarios that belong to ``profile``."""
    return [sc for sc in scenarios if profile in sc.profiles]
