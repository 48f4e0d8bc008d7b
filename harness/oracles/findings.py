"""One Finding type for every command (docs/ARCHITECTURE.md §6), and the verdict a run's findings give.

Every command — conformance, replay, interop, locks, crash, fuzz — reports what it saw as
``Finding`` values, prints them with ``Finding.line`` and writes them with ``Finding.to_json``,
so a maintainer reads the same fields whichever attack found the problem.  The verdict and the
exit code follow from the findings alone (``verdict``/``exit_code``), so no command can say
green on a hazard it did not show, or on a run in which nothing executed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

VIOLATION: Final = "violation"
"""Breaks a MUST of SPEC or an S-INV rule."""
HAZARD: Final = "hazard"
"""SPEC-conformant, yet harms users: data unreachable, a store blocked for a minute or for
ever, a failure that leaves a crash state behind, a raw OS error in a tool result."""
WEAKNESS: Final = "weakness"
"""An accepted S-INV-9 design weakness, shown with its measured rate."""
DEVIATION: Final = "deviation"
"""A failure listed in KNOWN_DEVIATIONS.md: expected, counted, never a pass."""
SEVERITIES: Final = (VIOLATION, HAZARD, WEAKNESS, DEVIATION)

# Verdicts of a run, from worst to best, and the exit code each gives (README, ``--help``).
PASS: Final = "pass"
FAIL: Final = "fail"
HAZARDOUS: Final = "hazard"
UNKNOWN: Final = "unknown"
ERROR: Final = "error"
INTERRUPTED: Final = "interrupted"  # Ctrl-C: the report holds what finished; never a pass
VERDICTS: Final = (PASS, FAIL, HAZARDOUS, UNKNOWN, ERROR)

EXIT_OK: Final = 0
EXIT_VIOLATION: Final = 1
EXIT_USAGE: Final = 2
EXIT_UNKNOWN: Final = 3
EXIT_INTERRUPTED: Final = 130
EXIT_CODES_HELP: Final = (
    "exit status: 0 no violation (hazards allowed unless --fail-on hazard), "
    "1 violations (or hazards under --fail-on hazard), 2 usage or setup error "
    "(nothing ran counts as one), 3 unknown (a checker ran out of budget), "
    "130 interrupted (Ctrl-C: the report of what finished is written, marked interrupted)"
)


@dataclass(frozen=True)
class Finding:
    """What one attack saw, in words a maintainer understands without the source.

    ``impl`` is the implementation's name and version as the implementation reported them;
    ``reproduce`` the command that shows it again; ``regression`` the scenario file exported
    for it (empty until exported).
    """

    kind: str
    severity: str
    clause: str = ""
    impl: str = ""
    op: str = ""
    syscall: str = ""
    evidence: str = ""
    reproduce: str = ""
    regression: str = ""
    path: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; one of {', '.join(SEVERITIES)}")
        if self.kind in SEVERITIES:  # `[violation] deviation …` read as two severities (issue 30)
            raise ValueError(f"kind {self.kind!r} is a severity name; a kind says what was seen")

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """What makes two findings the same regression (impl, kind, clause, op, syscall)."""
        return (self.impl, self.kind, self.clause, self.op, self.syscall)

    def line(self) -> str:
        """The one-line form every command prints."""
        where = " ".join(x for x in (self.clause, self.impl, self.op, self.syscall, self.path) if x)
        text = f"[{self.severity}] {self.kind}"
        if where:
            text += f" {where}"
        if self.evidence:
            text += f": {self.evidence}"
        return text

    def __str__(self) -> str:
        return self.line()

    def with_regression(self, path: str) -> Finding:
        return replace(self, regression=path)

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        fields = cls.__dataclass_fields__
        return cls(**{k: str(v) for k, v in data.items() if k in fields})


def summary(findings: Iterable[Finding]) -> dict[str, dict[str, int]]:
    """Counts by severity (every severity present, zeros included) and by kind."""
    found = list(findings)
    by_severity = {s: 0 for s in SEVERITIES}
    by_severity.update(Counter(f.severity for f in found))
    return {"by_severity": by_severity, "by_kind": dict(sorted(Counter(f.kind for f in found).items()))}


def summary_line(findings: Iterable[Finding]) -> str:
    """``2 violations, 1 hazard, 0 weaknesses`` — shown by every command, hazards included."""
    counts = summary(findings)["by_severity"]
    parts = []
    for severity in (VIOLATION, HAZARD, WEAKNESS):
        n = counts[severity]
        parts.append(f"{n} {severity}{'' if n == 1 else ('es' if severity == 'weakness' else 's')}")
    return ", ".join(parts)


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per regression key, first seen kept, order kept."""
    seen: dict[tuple[str, str, str, str, str], Finding] = {}
    for f in findings:
        seen.setdefault(f.key, f)
    return list(seen.values())


def verdict(
    findings: Iterable[Finding], *, executed: int, unknown: bool = False, fail_on_hazard: bool = False
) -> str:
    """The run's verdict: nothing executed is an ``error``, never a pass."""
    if executed <= 0:
        return ERROR
    severities = {f.severity for f in findings}
    if VIOLATION in severities:
        return FAIL
    if unknown:
        return UNKNOWN
    if HAZARD in severities:
        return FAIL if fail_on_hazard else HAZARDOUS
    return PASS


def exit_code(run_verdict: str, *, fail_on_hazard: bool = False) -> int:
    if run_verdict == FAIL:
        return EXIT_VIOLATION
    if run_verdict == HAZARDOUS:
        return EXIT_VIOLATION if fail_on_hazard else EXIT_OK
    if run_verdict == UNKNOWN:
        return EXIT_UNKNOWN
    if run_verdict == ERROR:
        return EXIT_USAGE
    if run_verdict == INTERRUPTED:
        return EXIT_INTERRUPTED
    return EXIT_OK
