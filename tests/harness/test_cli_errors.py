"""Bad input to the command line is one clear line and the documented exit code, never a
traceback (issue 12 item 7): each case of the issue's list that belongs to conformance,
replay, interop and check-history, the validators behind them, and the catch-all for a
harness bug."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memconform.harness import cli
from memconform.harness.commands import common
from memconform.harness.oracles.findings import EXIT_CODES_HELP

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EMPTY_EXPORTS = FIXTURES / "empty_exports.mjs"
FAKE_DRIVER = Path(__file__).resolve().parent / "fake_driver.mjs"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 2) -> str:
    """Run ``memconform argv`` in-process; assert the exit code and a single stderr line."""
    got = cli.main(argv)
    err = capsys.readouterr().err
    assert got == code, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"memconform {argv[0]}: "), lines[0]
    return lines[0]


# --- replay ------------------------------------------------------------------------------------


def test_replay_of_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = one_line_error(capsys, ["replay", str(tmp_path / "nope.json")])
    assert line.endswith("nope.json: no such file")


def test_replay_of_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = one_line_error(capsys, ["replay", str(tmp_path)])
    assert "is a directory" in line and "*.json" in line


def test_replay_of_invalid_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    line = one_line_error(capsys, ["replay", str(bad)])
    assert "scenario error" in line and "invalid JSON at line 1" in line


def test_replay_of_a_schema_invalid_scenario(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "x/y", "steps": "nope"}')
    line = one_line_error(capsys, ["replay", str(bad)])
    assert str(bad) in line


# --- interop -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--writers", "0"], "argument --writers: '0' must be at least 1"),
        (["--writers", "-1"], "argument --writers: '-1' must be at least 1"),
        (["--ops", "0"], "argument --ops: '0' must be at least 1"),
        (["--writers", "many"], "argument --writers: 'many' is not an integer"),
        (["--check-budget", "0"], "argument --check-budget: '0' must be a finite number greater than 0"),
    ],
)
def test_interop_counts_are_validated(capsys: pytest.CaptureFixture[str], args: list[str], expected: str) -> None:
    line = one_line_error(capsys, ["interop", *args])
    assert expected in line


def test_interop_with_a_missing_peer(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = one_line_error(capsys, ["interop", "--impl", "python", "--impl", f"pi:{tmp_path}/none.mjs"])
    assert "none.mjs: no such file" in line


# --- conformance -------------------------------------------------------------------------------


def test_against_a_missing_peer_is_one_line_not_a_diff_per_scenario(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    got = cli.main(["conformance", "--against", f"pi:{tmp_path}/none.mjs", "--run", "write/*"])
    out, err = capsys.readouterr()
    assert got == 2
    assert "DIFF" not in out and "SAME" not in out
    assert err.strip().splitlines() == [f"memconform conformance: pi:{tmp_path}/none.mjs: no such file"]


@needs_node
def test_against_a_peer_without_the_core_exports(capsys: pytest.CaptureFixture[str]) -> None:
    got = cli.main(["conformance", "--against", f"pi:{EMPTY_EXPORTS}", "--run", "write/*"])
    out, err = capsys.readouterr()
    assert got == 2, err
    assert "DIFF" not in out
    assert len(err.strip().splitlines()) == 1 and "empty_exports.mjs" in err


@needs_node
def test_a_module_that_exports_nothing_fails_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 12: ``export const x = 1;`` given as ``pi:`` was ``662 skipped``, exit 0.  Either the
    driver refuses it at ``hello`` or no scenario executes: exit 2 both ways, one line."""
    line = one_line_error(capsys, ["conformance", "--impl", f"pi:{EMPTY_EXPORTS}", "--quiet"])
    assert "empty_exports.mjs" in line or "scenarios ran" in line


@needs_node
def test_nothing_executed_is_a_setup_error_naming_why(capsys: pytest.CaptureFixture[str]) -> None:
    got = cli.main(["conformance", "--impl", f"node:{FAKE_DRIVER}", "--run", "write/create-*", "--quiet"])
    out, err = capsys.readouterr()
    assert got == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("memconform conformance: 0 of ")
    assert "the driver offers none of the ops they need (hello listed: exit, hello, reset, set_clock" in lines[0]
    assert "none ran" in out and " ok\n" not in out


def test_no_scenario_selected(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["conformance", "--run", "no-such-scenario/*"])
    assert "no scenario selected" in line and "--run no-such-scenario/*" in line


def test_a_missing_corpus_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = one_line_error(capsys, ["conformance", "--scenarios", str(tmp_path / "none")])
    assert line.endswith("none: no such scenario directory")


@pytest.mark.parametrize("bad", ["0", "-2", "two"])
def test_parallel_is_validated(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    line = one_line_error(capsys, ["conformance", "--parallel", bad])
    assert "argument --parallel" in line


def test_an_unknown_peer_kind(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["conformance", "--impl", "ruby"])
    assert "unknown peer 'ruby'" in line


def test_an_unknown_fail_on_level(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["conformance", "--fail-on", "weakness"])
    assert "argument --fail-on: invalid choice: 'weakness'" in line


# --- check-history -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\xff\xfe\x00garbage", "not a history (not UTF-8 text"),
        (b"this is not json\n", "not a history:"),
        (b'{"process": "w0", "type": "ok", "op": "x", "time": 1}\n', "ok without an invocation"),
        (b'{"process": "w0", "type": "weird", "op": "x", "time": 1}\n', "unknown event type 'weird'"),
        (b"", "the history holds no op"),
    ],
    ids=["binary", "not-json", "orphan-completion", "bad-type", "empty"],
)
def test_check_history_of_a_garbled_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, expected: str
) -> None:
    f = tmp_path / "h.jsonl"
    f.write_bytes(content)
    line = one_line_error(capsys, ["check-history", str(f)])
    assert expected in line


def test_check_history_of_an_empty_file_gives_no_verdict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Issue 31 item 9: it printed "0 ops: linearizable" and then its error."""
    f = tmp_path / "h.jsonl"
    f.write_bytes(b"")
    assert cli.main(["check-history", str(f)]) == 2
    out, err = capsys.readouterr()
    assert "linearizable" not in out and err.strip().endswith("the history holds no op"), (out, err)


def test_check_history_of_a_missing_file_and_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert one_line_error(capsys, ["check-history", str(tmp_path / "none.jsonl")]).endswith("no such file")
    assert "is a directory" in one_line_error(capsys, ["check-history", str(tmp_path)])


# --- the catch-all -----------------------------------------------------------------------------


def _fail_with(exc: BaseException) -> object:
    def run(args: argparse.Namespace) -> int:
        raise exc

    return run


def test_a_harness_bug_is_one_line_naming_the_exception(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from memconform.harness.commands import check_history

    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    monkeypatch.setattr(check_history, "run", _fail_with(RuntimeError("boom\nsecond line")))
    line = one_line_error(capsys, ["check-history", str(tmp_path)])
    assert line == (
        "memconform check-history: internal error RuntimeError: boom second line; "
        "set MEMCONFORM_DEBUG=1 for the traceback"
    )
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["check-history", str(tmp_path)])


def test_ctrl_c_exits_130(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memconform.harness.commands import check_history

    monkeypatch.setattr(check_history, "run", _fail_with(KeyboardInterrupt()))
    line = one_line_error(capsys, ["check-history", str(tmp_path)], code=130)
    assert line.startswith("memconform check-history: interrupted; the report holds what finished")


def test_a_missing_user_path_deep_in_a_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from memconform.harness.commands import check_history

    gone = FileNotFoundError(2, "No such file or directory", str(tmp_path / "x"))
    monkeypatch.setattr(check_history, "run", _fail_with(gone))
    line = one_line_error(capsys, ["check-history", str(tmp_path)])
    assert line == f"memconform check-history: {tmp_path / 'x'}: no such file or directory"


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "invalid choice: 'no-such-command'" in err
    assert cli.main(["replay"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "memconform replay: the following arguments are required: FILE (see memconform replay --help)"
    ]


def test_every_command_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    names = [m.NAME for m in cli.command_modules()]
    assert {"conformance", "replay", "interop", "check-history"} <= set(names)
    for name in names:
        assert cli.main([name, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert EXIT_CODES_HELP in text, name


# --- validators --------------------------------------------------------------------------------


def test_validators() -> None:
    assert common.positive_int("3") == 3
    assert common.positive_float("0.5") == 0.5
    assert common.int_list("1, 3,7") == [1, 3, 7]
    assert common.non_negative_int("0") == 0
    for fn, text in [
        (common.positive_int, "0"), (common.positive_int, "1.5"), (common.positive_float, "0"),
        (common.positive_float, "-1"), (common.positive_float, "nan"), (common.positive_float, "inf"),
        (common.int_list, "x"), (common.int_list, "1,,2"), (common.int_list, "-1"),
        (common.non_negative_int, "-1"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError):
            fn(text)


# --- as a user runs it --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["replay", "/nonexistent/scenario.json"], "memconform replay: /nonexistent/scenario.json: no such file"),
        (["interop", "--writers", "0"], "memconform interop: argument --writers: '0' must be at least 1"),
    ],
)
def test_as_a_subprocess(argv: list[str], expected: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(cli.DEBUG_ENV, None)
    done = subprocess.run(
        [sys.executable, "-m", "memconform.harness", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith(expected)


def test_impl_help_names_every_peer_kind(capsys: pytest.CaptureFixture[str]) -> None:
    """``--impl`` help lists every kind ``PeerSpec.parse`` takes, ``node:`` (your own driver) too."""
    for command in ("conformance", "crash", "locks", "interop", "fuzz", "replay"):
        assert cli.main([command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert all(kind in text for kind in ("python", "pi:<", "opencode:<", "node:<")), (command, text)


@pytest.mark.parametrize("command", ["conformance", "locks", "crash", "fuzz"])
def test_a_one_implementation_command_refuses_a_second_impl(capsys: pytest.CaptureFixture[str], command: str) -> None:
    """A command asked to test X tests X or refuses: a second ``--impl`` used to replace the
    first silently (``locks --impl pi:… --impl opencode:…`` ran OpenCode's matrix only)."""
    line = one_line_error(capsys, [command, "--impl", "python", "--impl", "pi:/nowhere/memory-core.mjs"])
    assert "--impl: given twice: this command tests one implementation" in line, line
