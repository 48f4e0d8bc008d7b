"""``crash``'s long runs show progress and refuse what help does not offer (issue 22 item 6).

``crash --exhaustive --topics 9`` was accepted although help says 2-3, then ran 439 s without a
line; ``crash --op all`` was silent up to 30 s at a time.  The explorer tells each sequence
it explores, and its progress total is the number it explores.
"""

from __future__ import annotations

import io

import pytest

from memconform.harness import cli
from memconform.harness.faults.explorer import Explorer, exhaustive_size
from memconform.harness.reports.progress import Progress


@pytest.mark.parametrize("bad", ["9", "1", "0", "two", "4"])
def test_crash_topics_outside_what_help_says_is_one_line_rc_2(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    got = cli.main(["crash", "--explore", "--exhaustive", "--topics", bad])
    err = capsys.readouterr().err
    assert got == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [f"memconform crash: argument --topics: {bad!r}: give 2 or 3 topics "
                                        "(see memconform crash --help)"]


def test_the_exhaustive_explorer_tells_each_sequence_and_its_total_is_right() -> None:
    told: list[int] = []
    ex = Explorer(recover=False, models=("strict",), advance=told.append)
    result = ex.exhaustive(topics=2, max_ops=1)
    assert sum(told) == result.sequences == exhaustive_size(2, 1) == 2 * 14
    assert exhaustive_size(3, 2) == 2 * (19 + 19 * 19)


def test_exploring_cases_advances_a_progress_line_per_case() -> None:
    from memconform.harness.faults.cases import CASES

    cases = [c for c in CASES.values() if "python" in c.impls][:3]
    log = io.StringIO()
    with Progress("crash explore", len(cases), stream=log) as bar:
        ex = Explorer(recover=False, models=("strict",), advance=bar.advance)
        for case in cases:
            ex.explore_case(case)
    assert log.getvalue().splitlines()[-1].startswith(f"crash explore: {len(cases)}/{len(cases)} (")
