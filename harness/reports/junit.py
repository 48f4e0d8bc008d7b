"""What every JUnit writer adds to a run that did not finish.

A CI that reads JUnit shows a suite with ``failures="0" errors="0"`` as green, so an
interrupted run (Ctrl-C, a partial merge) must carry an error there too, as its JSON and
HTML carry ``"interrupted": true`` (issue 31 item 2).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

INTERRUPTED_CASE = "memconform: run interrupted"


def mark_interrupted(suite: ET.Element, why: str) -> None:
    """Add an errored testcase saying the run stopped early, counted in ``tests`` and ``errors``."""
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))
    suite.set("errors", str(int(suite.get("errors", "0")) + 1))
    case = ET.SubElement(suite, "testcase", classname="memconform", name=INTERRUPTED_CASE, time="0")
    ET.SubElement(case, "error", message=why, type="interrupted").text = (
        "The run was interrupted: the testcases above are only what finished; "
        "the rest did not run. This suite is not a pass."
    )
