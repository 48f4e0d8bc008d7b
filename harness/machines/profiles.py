"""Hypothesis profiles for the machines: ``ci`` (default), ``dev``, ``nightly`` and ``host``.

Selected by ``HYPOTHESIS_PROFILE``.  They are registered under ``memconform-<name>`` and
applied to the machines explicitly, never loaded globally: Hypothesis ships its own ``ci``
profile (derandomized, loaded automatically on CI hosts) and other test modules load theirs,
so a global load here would change unrelated tests.  Every profile keeps randomisation on
(``derandomize=False``) and prints the reproduction blob; no profile writes an example
database into the repository.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, Verbosity, settings

ENV = "HYPOTHESIS_PROFILE"
DEFAULT = "ci"
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

_COMMON: dict[str, object] = {
    "deadline": None,  # real files and processes: timing varies with the host
    "derandomize": False,
    "database": None,
    "print_blob": True,
    "suppress_health_check": _SUPPRESS,
    "verbosity": Verbosity.normal,
    "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
}

PROFILES: dict[str, settings] = {
    # fast and bounded: all machines together stay well inside the CI budget
    "ci": settings(max_examples=80, stateful_step_count=50, **_COMMON),  # type: ignore[arg-type]
    "dev": settings(max_examples=200, stateful_step_count=100, **_COMMON),  # type: ignore[arg-type]
    "nightly": settings(max_examples=1000, stateful_step_count=500, **_COMMON),  # type: ignore[arg-type]
    # a real host takes about a second a step (the session machine on a host): few, short sessions
    "host": settings(max_examples=6, stateful_step_count=10, **_COMMON),  # type: ignore[arg-type]
}

for _name, _settings in PROFILES.items():
    settings.register_profile(f"memconform-{_name}", _settings)


def profile_name(name: str | None = None) -> str:
    """The profile asked for (argument, then ``HYPOTHESIS_PROFILE``), ``ci`` by default."""
    chosen = name or os.environ.get(ENV) or DEFAULT
    chosen = chosen.removeprefix("memconform-")
    if chosen not in PROFILES:
        raise ValueError(f"unknown machine profile {chosen!r} (known: {', '.join(PROFILES)})")
    return chosen


def profile(name: str | None = None, **overrides: object) -> settings:
    """The settings of a profile, with per-machine overrides (e.g. fewer examples)."""
    return settings(PROFILES[profile_name(name)], **overrides)  # type: ignore[arg-type]
