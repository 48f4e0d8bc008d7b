"""The one progress reporter (issue 16 item 5): plain lines in a log, a live rich line on a
terminal that fits its width, nothing under ``quiet``."""

from __future__ import annotations

import io

import pytest

from memconform.harness.reports import progress as progress_module
from memconform.harness.reports.progress import progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_plain_lines_and_a_final_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "LOG_EVERY_S", 0.0)
    out = io.StringIO()
    with progress("conformance python", 3, stream=out) as bar:
        bar.advance(note="a/one")
        bar.advance(2, note="a/three")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("conformance python: 1/3 (") and lines[0].endswith("a/one")
    assert "ETA" in lines[0] and lines[-1].startswith("conformance python: 3/3 (")
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()  # a CI log reads top to bottom


def test_ci_set_means_plain_even_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    out = Tty()
    with progress("locks", 2, stream=out) as bar:
        assert not bar.live
        bar.advance(2)
    assert out.getvalue().startswith("locks: 2/2")


def test_a_terminal_gets_one_live_line_within_its_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "60")
    out = Tty()
    with progress("fuzz store_model", 10, stream=out) as bar:
        assert bar.live
        for i in range(10):
            bar.advance(note=f"batch {i}")
    text = out.getvalue()
    assert "10/10" in text and "fuzz store_model" in text
    visible = [ln for ln in text.replace("\r", "\n").split("\n") if ln.strip()]
    assert visible and all(len(strip_ansi(ln)) <= 60 for ln in visible)


def test_quiet_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "LOG_EVERY_S", 0.0)
    for stream in (io.StringIO(), Tty()):
        with progress("bench", 2, quiet=True, stream=stream) as bar:
            bar.advance(2)
        assert stream.getvalue() == ""


def strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_the_log_interval_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMCONFORM_PROGRESS_EVERY sets the seconds between plain lines; a bad value keeps 5 s."""
    monkeypatch.setenv("MEMCONFORM_PROGRESS_EVERY", "0.25")
    assert progress_module.log_every() == 0.25
    for bad in ("0", "-1", "inf", "nan", "soon", ""):
        monkeypatch.setenv("MEMCONFORM_PROGRESS_EVERY", bad)
        assert progress_module.log_every() == progress_module.LOG_EVERY_S, bad
