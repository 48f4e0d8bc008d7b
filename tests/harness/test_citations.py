"""Every citation resolves (issue 22 item 3): README, docs, help texts, code, tests and scenarios
cite files, clause ids and sections, and a reader who follows one must find it.

- a repository path (``docs/ci.md``, ``harness/oracles/*.py``, a Markdown link) exists;
- a bare document name (``SPEC.md``) names a file of the repository, or a file of the store;
- a clause id (``S-…``, ``SS-…``, ``PEER-…``, ``A-…``, ``B-…``, ``C-…``), in text, in a scenario's
  ``clauses`` or in a test's name, is defined in docs/SPEC.md or docs/SHARED_STORE.md (both read
  with the parsers of ``tests.clause_coverage`` and ``tests.shared_store_coverage``);
- a section (``docs/ARCHITECTURE.md §5``, ``SPEC §20``) is a numbered heading of that document;
- a scenario named in a document (``scenario `format/…` ``) is in the corpus.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests import clause_coverage, shared_store_coverage
from tests.clause_coverage import spec_ids

ROOT = Path(__file__).resolve().parents[2]
TOP = ("docs", "harness", "reference", "scenarios", "tests", "examples", "benchmarks", "memconform")
SCANNED_DIRS = ("docs", "harness", "reference", "scenarios", "tests", "examples", "benchmarks")
SCANNED_FILES = ("README.md", "Makefile", "pyproject.toml", ".ci/run")
SUFFIXES = {".md", ".py", ".mjs", ".js", ".json", ".toml"}
# files of the JS tools (SPEC's sources, the peers' own suites); not (and never to be) in this repository
FOREIGN = {"tests/core.test.mjs", "docs/configuration.md", "tests/shared-store-test.mjs"}
SELF = "tests/harness/test_citations.py"  # its examples of dangling citations are meant to dangle
# store files and files of an agent's workspace, not documents of this repository
STORE_NAMES = {"MEMORY.md", "HANDOFF.md", "AGENTS.md", "CLAUDE.md"}
# what a bare ``SPEC`` / ``ARCHITECTURE`` in a section citation means
DOCS = {"SPEC": "docs/SPEC.md", "ARCHITECTURE": "docs/ARCHITECTURE.md", "SHARED_STORE": "docs/SHARED_STORE.md"}

PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP) + r")/[\w.*/-]*[\w*/])(?![<«{$%\[\w])")
BARE_DOC = re.compile(r"(?<![\w./-])([A-Z][A-Z_-]+\.md)\b")
# a relative link to a document or a folder (lowercase ``[A](a.md)`` is an index line, store content)
LINK = re.compile(r"\]\(((?:[\w.-]+/)+[\w.-]*|(?:\.\./)*[A-Z][A-Z_-]+\.md)(?:#[^)]*)?\)")
CLAUSE = re.compile(r"(?<![\w-])((?:SS|S)-[A-Z]+-\d+|PEER-\d+|[ABC]-\d+)(?![\w-])")
SECTION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[A-Z][A-Z_]+(?:\.md)?)(?: §| section )(\d+)(?:\s*[–-]\s*§?(\d+))?")
SCENARIO_REF = re.compile(r"scenarios? ((?:`[\w/-]+/[\w-]+`(?:, )?)+)")
HEADING = re.compile(r"^#{1,3} (?:Appendix )?(\d+)\b", re.M)
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
COMMENT = re.compile(r"(?:^|(?<=\s))#[^\n]*", re.M)  # (also a " #" inside a string: more text checked, not less)


def scanned() -> Iterator[Path]:
    for name in SCANNED_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for top in SCANNED_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                yield path


@cache
def texts() -> dict[str, str]:
    """Each scanned file's citable text: the whole file, but for a scenario only its prose and
    its ``clauses`` (its store contents are data, where ``A-1`` may be a topic name)."""
    out = {}
    for path in scanned():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel.startswith("scenarios/") and path.suffix == ".json" and not path.name.endswith("schema.json"):
            data = json.loads(text)
            text = "\n".join([data.get("description", ""), *data.get("clauses", ()),
                              json.dumps(data.get("regression", ""))])
        elif rel.startswith("tests/") and path.suffix == ".py":
            text = prose_of_test(text)
        if rel != SELF:
            out[rel] = text
    return out


def docstrings(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        yield ast.get_docstring(node) or ""
        for child in node.body:
            yield from docstrings(child)


def prose_of_test(source: str) -> str:
    """A test module's docstrings and comments: its other string literals are test data."""
    return "\n".join([*docstrings(ast.parse(source)), *COMMENT.findall(source)])


@cache
def clause_ids() -> set[str]:
    shared = shared_store_coverage.DOC.read_text(encoding="utf-8")
    return spec_ids() | set(shared_store_coverage.doc_clauses(shared))


@cache
def repo_names() -> set[str]:
    """Names of the documents a bare ``X.md`` may mean."""
    return {p.name for p in ROOT.glob("*.md")} | {p.name for top in ("docs", "scenarios", "benchmarks")
                                                 for p in (ROOT / top).glob("*.md")}


def path_exists(token: str) -> bool:
    token = token.rstrip(".")
    if "*" in token:
        return any(ROOT.glob(token.rstrip("/")))
    return (ROOT / token).exists()


def headings(doc: str) -> set[str]:
    return set(HEADING.findall((ROOT / doc).read_text(encoding="utf-8")))


def resolve_doc(name: str) -> str | None:
    """The repository file a section citation names, or None."""
    if name in DOCS:
        return DOCS[name]
    for candidate in (name, f"docs/{name}"):
        if (ROOT / candidate).is_file():
            return candidate
    return None


def problems_in(rel: str, text: str) -> list[str]:
    out = []
    for m in PATH.finditer(text):
        token = m.group(1).rstrip(".")
        if token not in FOREIGN and not path_exists(token):
            out.append(f"{rel}: cites {token}, which does not exist")
    for m in BARE_DOC.finditer(text):
        name = m.group(1)
        if name not in STORE_NAMES and name not in repo_names():
            out.append(f"{rel}: cites {name}, which is no file of the repository")
    if rel.endswith(".md"):
        for m in LINK.finditer(CODE.sub("", text)):  # a link inside code is store content
            if not (ROOT / rel).parent.joinpath(m.group(1)).exists():
                out.append(f"{rel}: links {m.group(1)}, which does not exist")
    for m in CLAUSE.finditer(text):
        if m.group(1) not in clause_ids():
            out.append(f"{rel}: cites {m.group(1)}, which docs/SPEC.md and docs/SHARED_STORE.md do not define")
    for m in SECTION.finditer(text):
        doc = resolve_doc(m.group(1))
        if doc is None:
            out.append(f"{rel}: cites {m.group(0)}: no such document")
            continue
        for number in filter(None, (m.group(2), m.group(3))):
            if number not in headings(doc):
                out.append(f"{rel}: cites {doc} §{number}, which has no such section")
    if rel.endswith(".md"):
        for m in SCENARIO_REF.finditer(text):
            for sid in re.findall(r"`([^`]+)`", m.group(1)):
                if not (ROOT / "scenarios" / "conformance" / f"{sid}.json").is_file():
                    out.append(f"{rel}: names scenario {sid}, which is not in the corpus")
    return out


def test_every_citation_resolves() -> None:
    found = [p for rel, text in texts().items() for p in problems_in(rel, text)]
    assert not found, f"{len(found)} dangling citations:\n" + "\n".join(found)


def test_every_clause_a_test_name_cites_exists() -> None:
    named = clause_coverage.tested_clauses(ROOT / "tests") | shared_store_coverage.tested(ROOT / "tests")
    assert not sorted(named - clause_ids())


def test_the_spec_and_the_architecture_are_in_the_repository() -> None:
    spec = (ROOT / "docs" / "SPEC.md").read_text(encoding="utf-8")
    assert "S-WRITE-14" in spec_ids() and "PEER-18" in spec_ids() and "A-13" in spec_ids()
    assert "## 7 WRITE" in spec
    assert {"3", "4", "5", "6", "7"} <= headings("docs/ARCHITECTURE.md")


@pytest.mark.parametrize("bad", [
    "see DESIGN.md §5 for the wings",
    "the protocol (docs/ARCHITECTURE.md §42)",
    "clause S-WRITE-99 says",
    "as SS-LOCK-999 requires",
    "quirk B-99",
    "the doc docs/NO-SUCH.md",
    "from harness/no_such_module.py",
    "[the spec](docs/NOPE.md)",
    "(scenario `format/no-such-scenario`)",
])
def test_a_dangling_citation_is_caught(bad: str) -> None:
    assert problems_in("docs/x.md", bad), bad


@pytest.mark.parametrize("good", [
    "see docs/ARCHITECTURE.md §5 and SPEC §20 (S-WRITE-14, SS-LAYOUT-1, PEER-3, A-13, B-3, C-1)",
    "the wings (docs/SPEC.md §7–§9), docs/ci.md, harness/oracles/*.py",
    "written in MEMORY.md and HANDOFF.md; see SPEC.md and KNOWN_DEVIATIONS.md",
    "(scenario `format/summary-cap-splits-surrogate-pair`)",
])
def test_a_resolving_citation_passes(good: str) -> None:
    assert problems_in("README.md", good) == []


def test_a_test_module_is_read_for_its_prose_not_its_data() -> None:
    source = 'DATA = "S-NOPE-1"  # see DESIGN.md §5\n\n\ndef test_x() -> None:\n    """Per S-WRITE-99."""\n'
    prose = prose_of_test(source)
    assert "DESIGN.md §5" in prose and "S-WRITE-99" in prose and "S-NOPE-1" not in prose
