"""docs/ARCHITECTURE.md §5's layout rules, read from the source: who may import whom, and module size.

The rules keep the judge apart from what it judges: an oracle using the reference's parser
would pass the reference's own defects, and a plain conformance run that loads the strace
and explorer machinery pays for what it does not use.  Imports are read with ``ast`` (every
``import`` in the file, function bodies and ``TYPE_CHECKING`` blocks included), relative
imports resolved against the module's package.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reference", "harness")
MAX_LINES = 600
# Modules allowed over MAX_LINES, each with its reason.  Empty: every module fits.
LONG_MODULES: dict[str, str] = {}
# What harness/faults/ may take from reference/: the Fs seam and its errors, the clock, the
# Store and serve (it replays the reference in process), and the string semantics.
FAULTS_MAY_IMPORT = frozenset(
    {"memconform.reference.fs", "memconform.reference.store", "memconform.reference.serve", "memconform.reference.clock", "memconform.reference.errors", "memconform.reference.text"}
)
ORACLES_MAY_IMPORT = frozenset({"memconform.reference.text"})
# The strace and explorer machinery a plain conformance run must not load (the old names too).
HEAVY = (
    "memconform.harness.faults.strace", "memconform.harness.faults.explorer", "memconform.harness.faults.memfs",
    "memconform.harness.faults.campaigns", "memconform.harness.faults.crash", "memconform.harness.faults.inject",
)
# The fault-ish wings: they attack, so they may reach the reference through its seams only,
# and a plain conformance run loads none of them.
FAULT_WINGS = ("memconform.harness.faults", "memconform.harness.interleave")


@cache
def modules() -> dict[str, Path]:
    """Every module of the two packages by dotted name (``pkg/__init__.py`` is ``pkg``)."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(["memconform", *parts])] = path
    return out


def _base(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` reads from."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".")
    if modules()[module].name != "__init__.py":
        package.pop()
    if node.level > 1:
        package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


@cache
def imports(module: str) -> frozenset[str]:
    """The modules ``module`` imports; ``from pkg import sub`` counts as ``pkg.sub``."""
    tree = ast.parse(modules()[module].read_text("utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in modules() else base)
    return frozenset(out)


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _of(package: str) -> list[str]:
    return [m for m in modules() if _within(m, package)]


def test_the_module_map_is_read() -> None:
    """Guard against a rule passing because it saw nothing."""
    assert {"memconform.reference.text", "memconform.harness.oracles.grammar", "memconform.harness.gate.runner"} <= set(modules())
    assert "memconform.reference.text" in imports("memconform.harness.oracles.grammar")
    assert "memconform.harness.oracles.grammar" in imports("memconform.harness.oracles.invariants")


def test_reference_imports_nothing_of_the_harness() -> None:
    bad = {m: sorted(i for i in imports(m) if _within(i, "memconform.harness")) for m in _of("memconform.reference")}
    assert {m: i for m, i in bad.items() if i} == {}


def test_oracles_take_only_string_semantics_from_the_reference() -> None:
    """docs/ARCHITECTURE.md §5: an oracle never judges with the reference's own parsers, slugs or store."""
    bad = {
        m: sorted(i for i in imports(m) if _within(i, "memconform.reference") and i not in ORACLES_MAY_IMPORT)
        for m in _of("memconform.harness.oracles")
    }
    assert {m: i for m, i in bad.items() if i} == {}


@pytest.mark.parametrize("wing", FAULT_WINGS)
def test_faults_reach_the_reference_only_through_its_seams(wing: str) -> None:
    """docs/ARCHITECTURE.md §5: faults use the Fs seam, Store and serve; no other reference internals."""
    assert _of(wing), f"{wing} has no modules: the rule would pass on nothing"
    bad = {
        m: sorted(i for i in imports(m) if _within(i, "memconform.reference") and i not in FAULTS_MAY_IMPORT)
        for m in _of(wing)
    }
    assert {m: i for m, i in bad.items() if i} == {}


def _graph(package: str) -> dict[str, list[str]]:
    """``package``'s modules and which of them each imports (``TYPE_CHECKING`` imports count:
    a cycle hidden from the interpreter is still two modules that cannot be read apart)."""
    mods = _of(package)
    return {m: sorted(i for i in imports(m) if i in mods and i not in (m, package)) for m in mods}


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The import cycles of ``graph``, each as the path that closes it."""
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in graph.get(m, []):
            if state.get(n) == 1:
                found.append([*path[path.index(n):], n])
            elif n not in state:
                visit(n, [*path, n])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])
    return found


def test_the_interleave_package_has_no_import_cycle() -> None:
    """Issue 24: the nemesis engine and its settle step once imported each other."""
    graph = _graph("memconform.harness.interleave")
    assert len(graph) > 3 and any(graph.values())
    assert _cycles(graph) == []


def test_no_import_cycle_anywhere() -> None:
    """Issue 28: two modules that import each other cannot be read, tested or moved apart.

    Every module of ``reference/`` and ``harness/``, function-level and ``TYPE_CHECKING``
    imports included; a module importing its own package's ``__init__`` (for a constant) is an
    edge like any other."""
    graph = {m: sorted(i for i in imports(m) if i in modules() and i != m) for m in modules()}
    assert len(graph) > 150 and sum(map(len, graph.values())) > 300
    assert _cycles(graph) == []


# Issue 28: the root of harness/ holds the entry points and the packages, nothing else.
HARNESS_ROOT_FILES = frozenset({"__init__.py", "__main__.py", "cli.py", "pytest_plugin.py"})
HARNESS_PACKAGES = frozenset(
    {"bench", "checker", "commands", "drivers", "faults", "gate", "hosts", "interleave", "machines", "oracles", "reports", "writers"}
)


def test_the_harness_root_holds_only_entry_points_and_packages() -> None:
    entries = {p.name for p in (ROOT / "harness").iterdir() if p.name != "__pycache__"}
    files = {n for n in entries if (ROOT / "harness" / n).is_file()}
    folders = entries - files
    assert files == HARNESS_ROOT_FILES
    assert folders == HARNESS_PACKAGES
    assert all((ROOT / "harness" / f / "__init__.py").is_file() for f in folders)


def test_the_architecture_lists_every_harness_package() -> None:
    """README's layout table and docs/ARCHITECTURE.md §5 name real folders, and all of them."""
    for doc in ("README.md", "docs/ARCHITECTURE.md"):
        text = (ROOT / doc).read_text("utf-8")
        # README names ``harness/gate/``; ARCHITECTURE's tree names ``gate/`` at the start of a line
        missing = sorted(p for p in HARNESS_PACKAGES if not re.search(rf"(harness/|^  ){p}/", text, re.M))
        assert missing == [], f"{doc} does not list {missing}"


def test_the_cycle_finder_sees_a_cycle() -> None:
    """Guard: the cycle rule would pass on a finder that finds nothing."""
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": ["b"], "b": []}) == []


def test_no_module_over_the_line_limit() -> None:
    long = {}
    for name, path in modules().items():
        n = len(path.read_text("utf-8").split("\n")) - 1
        if n > MAX_LINES and name not in LONG_MODULES:
            long[name] = n
    assert long == {}
    stale = sorted(set(LONG_MODULES) - set(modules()))
    assert stale == [], "exceptions listed for modules that no longer exist"


def test_a_plain_conformance_run_loads_no_strace_or_explorer() -> None:
    """The runner reaches for ``harness.faults.strace`` only when a scenario carries a fault."""
    code = (
        "import memconform.harness.cli, memconform.harness.gate.runner, memconform.harness.commands.conformance, sys; "
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith(('memconform.harness.faults', "
        "'memconform.harness.interleave')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert sorted(loaded & set(HEAVY)) == []
    assert sorted(m for m in loaded if m.startswith("memconform.harness.interleave")) == []


@pytest.mark.parametrize(
    ("module", "node", "expected"),
    [
        ("memconform.harness.oracles.grammar", "from .spec import X", "memconform.harness.oracles.spec"),
        ("memconform.harness.oracles.grammar", "from . import spec", "memconform.harness.oracles"),
        ("memconform.harness.oracles", "from .grammar import parse", "memconform.harness.oracles.grammar"),
        ("memconform.harness.faults.memfs", "from ..gate.scenarios import X", "memconform.harness.gate.scenarios"),
        ("memconform.harness.oracles.grammar", "from memconform.reference.text import trim", "memconform.reference.text"),
    ],
)
def test_relative_imports_resolve(module: str, node: str, expected: str) -> None:
    stmt = ast.parse(node).body[0]
    assert isinstance(stmt, ast.ImportFrom)
    assert _base(module, stmt) == expected
