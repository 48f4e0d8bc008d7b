"""``memconform fuzz``: bad input is one line and exit 2; every machine drives the named
implementation or is refused with a reason; the JSON report follows the shared schema."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from memconform.harness import cli
from memconform.harness.machines import MACHINES
from memconform.harness.reports.envelope import SCHEMA_PATH

FAKE_DRIVER = Path(__file__).resolve().parent / "fake_driver.mjs"
PI_CORE = os.environ.get("MEMCONFORM_PI_CORE", "")


def _main(argv: list[str]) -> int:
    """``cli.main``, with argparse's own exit turned into the code it carries."""
    try:
        return cli.main(argv)
    except SystemExit as e:
        return int(e.code or 0)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--profile", "bogus"], "ci, dev, nightly"),
        (["--impl", "pi:/nonexistent"], "no such file"),
        (["--impl", "bogus"], "unknown peer"),
        (["--minutes", "0"], "greater than 0"),
        (["--minutes", "-1"], "greater than 0"),
        (["--minutes", "nan"], "greater than 0"),
        (["--machine", "nope"], "store_model"),
        (["--seed", "x"], "not an integer"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = _main(["fuzz", *argv])
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("memconform fuzz: ") and words in lines[0]
    assert "Traceback" not in out + err


def _json(path: Path) -> Any:
    data = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    return data


def test_every_machine_refused_for_a_driver_is_exit_2_with_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A driver with none of the store ops: the store machine names the missing ops, the
    in-process machines say what seam they need; nothing ran, so the run is a usage error."""
    if not FAKE_DRIVER.exists() or not _node():
        pytest.skip("node is not installed")
    argv = ["fuzz", "--impl", f"node:{FAKE_DRIVER}", "--minutes", "0.01", "--json", str(tmp_path / "r.json"),
            "--export", str(tmp_path / "regs")]
    for name in ("store_model", "rollback", "lock_holders", "lock_protocol", "session"):
        argv += ["--machine", name]
    code = _main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    rows = {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in MACHINES}
    assert "refused: the driver lacks the ops" in rows["store_model"] and "write_memory" in rows["store_model"]
    assert "refused:" in rows["rollback"] and "crash --errors" in rows["rollback"]
    assert "refused:" in rows["lock_holders"] and "memconform locks" in rows["lock_holders"]
    assert "refused: the driver lacks the ops" in rows["lock_protocol"]
    assert "refused:" in rows["session"] and "hook" in rows["session"]
    assert "no machine ran" in err
    data = _json(tmp_path / "r.json")
    assert data["verdict"] == "error"
    assert data["impls"] == [{"spec": f"node:{FAKE_DRIVER}", "name": "fake", "version": "0"}]
    assert not (tmp_path / "regs").exists()


def _node() -> bool:
    import shutil

    return shutil.which("node") is not None


@pytest.mark.skipif(not PI_CORE, reason="no peer: set MEMCONFORM_PI_CORE=<memory-core.mjs>")
def test_fuzz_on_pi_drives_pi_or_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "pi.json"
    code = _main(["fuzz", "--impl", f"pi:{PI_CORE}", "--minutes", "0.01", "--machine", "store_model",
                  "--machine", "rollback", "--machine", "session", "--json", str(out_json),
                  "--export", str(tmp_path / "regs")])
    out = capsys.readouterr().out
    data = _json(out_json)
    impl = data["impls"][0]
    rows = {r["machine"]: r for r in data["machines"]}
    assert rows["store_model"]["ran_against"] == f"{impl['name']} {impl['version']}"
    assert "memconform-reference" not in rows["store_model"]["ran_against"]
    assert rows["store_model"]["steps"] > 0
    assert rows["rollback"]["refused"] and rows["session"]["refused"]
    assert any(line.startswith("store_model") and impl["name"] in line for line in out.splitlines())
    assert code in (0, 1)  # 1 would be a finding on pi, reported with its regression
    if code == 1:
        assert all(f["impl"].startswith(impl["name"]) for f in data["findings"])


def test_short_python_run_writes_a_schema_valid_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "f.json"
    code = _main(["fuzz", "--impl", "python", "--minutes", "0.01", "--machine", "lock_holders",
                  "--json", str(out_json), "--export", str(tmp_path / "regs")])
    out = capsys.readouterr().out
    assert code == 0, out
    data = _json(out_json)
    assert data["verdict"] == "pass" and data["findings"] == []
    rows = data["machines"]
    assert isinstance(rows, list) and rows[0]["machine"] == "lock_holders"
    assert rows[0]["ran_against"].startswith("memconform-reference") and rows[0]["steps"] > 0
    assert not (tmp_path / "regs").exists()


def test_a_machine_failure_is_a_finding_with_its_seed_and_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store that cuts summaries at 400 units: the store machine fails, the report holds a
    violation naming the machine, the seed, the implementation and the exported scenario."""
    monkeypatch.setattr("memconform.reference.store.MAX_SUMMARY_LENGTH", 400)
    out_json = tmp_path / "f.json"
    code = _main(["fuzz", "--impl", "python", "--minutes", "0.01", "--machine", "store_model", "--profile", "dev",
                  "--seed", "20260807", "--json", str(out_json), "--export", str(tmp_path / "regs")])
    capsys.readouterr()
    assert code == 1
    data = _json(out_json)
    assert data["verdict"] == "fail"
    (finding,) = data["findings"]
    assert finding["severity"] == "violation" and finding["op"] == "store_model"
    assert "seed 20260807" in finding["evidence"] and "--seed 20260807" in finding["reproduce"]
    assert finding["impl"].startswith("memconform-reference")
    assert finding["regression"] and Path(finding["regression"]).parent == tmp_path / "regs"
    assert Path(finding["regression"]).name.startswith("store_model-")


def test_no_export_writes_no_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("memconform.reference.store.MAX_SUMMARY_LENGTH", 400)
    monkeypatch.chdir(tmp_path)
    code = _main(["fuzz", "--impl", "python", "--minutes", "0.01", "--machine", "store_model", "--profile", "dev",
                  "--seed", "20260807", "--no-export", "--export", str(tmp_path / "regs")])
    capsys.readouterr()
    assert code == 1
    assert not (tmp_path / "regs").exists()


def test_batches_are_sized_to_the_budget_at_the_measured_speed() -> None:
    from memconform.harness.commands.fuzz import PROBE_EXAMPLES, Tally, batch_size

    fresh = Tally()
    assert batch_size(fresh, 1000.0, most=200) == PROBE_EXAMPLES  # first a small probe
    assert batch_size(fresh, 1000.0, most=2) == 2
    measured = Tally(examples=10, seconds=5.0)  # 0.5 s an example
    assert batch_size(measured, 20.0, most=200) == 40
    assert batch_size(measured, 1000.0, most=200) == 200  # never past the profile's count
    assert batch_size(measured, 0.1, most=200) == 1  # at least one example a batch
