"""The numbers README and the CI recipe state about the corpus are the corpus's (issue 22 item 8:
README said 662 scenarios where there were 663)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from memconform.harness.gate import profiles
from memconform.harness.gate.scenarios import discover
from memconform.harness.gate.selection import BUILTIN

ROOT = Path(__file__).resolve().parents[2]


@cache
def default_run_size() -> int:
    """How many scenarios ``memconform conformance --impl python`` runs (profile openpi)."""
    return len(profiles.select(list(discover(BUILTIN, [], [], validate=False)), "openpi"))


def test_readme_states_the_default_run_as_it_ends() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.findall(r"`conformance` ends `(\d+) passed, 0 failed", text)
    assert stated == [str(default_run_size())]


def test_the_ci_recipe_counts_the_default_profile() -> None:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    stated = re.findall(r"(\d+) scenarios in the default profile", text)
    assert stated in ([], [str(default_run_size())])  # where the recipe gives the count, it is right
