"""Nemesis findings as regressions (issue 13 item 4): the file, its minimal history and the
schedule; ``memconform replay`` of it re-runs the schedule and says "reproduced k of n runs"."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memconform.harness.checker.history import History
from memconform.harness.checker.linearize import LinearizabilityVerdict
from memconform.harness.cli import main
from memconform.harness.gate.regressions import file_stem
from memconform.harness.interleave import export as nx
from memconform.harness.oracles.findings import HAZARD, VIOLATION, Finding

SCHEDULE = {"seed": 3, "families": ["kill"], "interval": 1.0, "time_limit": 2.0, "writers": 2, "shared": True,
            "faults": [{"id": 0, "at": 0.5, "family": "kill", "slot": 1, "holder": False, "params": {}}]}
REF = "memconform-reference 0.1.0"


@dataclass
class FakeRun:
    """What a nemesis run leaves that export reads: the history (schedule in its meta)."""

    history: History
    verdicts: dict[str, LinearizabilityVerdict] = field(default_factory=dict)

    def findings(self, labels: dict[str, str], reproduce: str = "") -> list[Finding]:
        return list(FINDINGS.pop(0)) if FINDINGS else []


FINDINGS: list[list[Finding]] = []


def _run() -> FakeRun:
    h = History(meta={"schedule": SCHEDULE, "impls": {"w0": "python", "w1": "python"}, "hardened": False,
                      "topics": ["Alpha Notes"]})
    a = {"topic": "Alpha Notes", "content": "tok-w0-0", "summary": "w0 0"}
    b = {"topic": "Bravo Config", "content": "tok-w1-0", "summary": "w1 0"}
    h.record("w0", "invoke", "write_memory", a)
    h.record("w1", "invoke", "write_memory", b)
    h.record("nemesis-0", "invoke", "nemesis", {"family": "kill", "slot": 1})
    h.record("w0", "ok", "write_memory", a, 'Created memory topic "Alpha Notes" (alpha-notes.md).')
    h.record("w1", "info", "write_memory", b, "killed by nemesis (fault 0)")
    h.record("nemesis-0", "ok", "nemesis", {}, {"killed": 1, "restarted": 2})
    later = {"topic": "Charlie", "content": "tok-w1-1", "summary": "w1 1"}
    h.record("w1", "invoke", "write_memory", later)
    h.record("w1", "ok", "write_memory", later, 'Created memory topic "Charlie" (charlie.md).')
    return FakeRun(h)


LOST = Finding("lost-write", VIOLATION, clause="S-INV-3", impl=REF, op="write_memory",
               evidence="w0: 'Alpha Notes' tok-w0-0 not reachable through the index", reproduce="memconform interop …")


def test_export_keeps_the_named_op_the_faults_over_it_and_the_schedule(tmp_path: Path) -> None:
    f = nx.export(LOST, _run(), directory=tmp_path, runs_seen="reference alone, kill, seed 3")
    path = Path(f.regression)
    assert path.parent == tmp_path and path.name == file_stem(LOST) + nx.SUFFIX
    loaded = nx.load(path)
    assert loaded.schedule == SCHEDULE and loaded.specs == ["python"]
    assert loaded.finding["kind"] == "lost-write" and loaded.finding["seen"] == "reference alone, kill, seed 3"
    kept = History.load(path)
    assert {(o.process, o.args.get("content")) for o in kept.ops()} == {("w0", "tok-w0-0")}
    assert [o.process for o in kept.faults()] == ["nemesis-0"]  # the kill overlapped the write
    # one file per regression key: a second finding of the same key keeps the first file
    again = nx.export(LOST, _run(), directory=tmp_path)
    assert again.regression == f.regression and len(list(tmp_path.iterdir())) == 1


def test_export_of_a_double_holder_keeps_its_writers_ops_while_its_faults_were_on(tmp_path: Path) -> None:
    dh = Finding("double-holder", "weakness", clause="S-INV-9", impl=REF, path="/s/.lock",
                 evidence="w0 held /s/.lock from its create until its unlink, and w1 created it again 1.7 ms "
                          "after w0's create; faults: kill#0")
    kept = History.load(Path(nx.export(dh, _run(), directory=tmp_path).regression))
    assert sorted((o.process, o.type) for o in kept.ops()) == [("w0", "ok"), ("w1", "info")]  # not w1's later op
    assert [o.process for o in kept.faults()] == ["nemesis-0"]


def test_export_of_a_finding_naming_no_op_keeps_the_faults(tmp_path: Path) -> None:
    unavailable = Finding("unavailable", HAZARD, clause="S-LOCK-3", impl=REF, evidence="after 61.2 s")
    kept = History.load(Path(nx.export(unavailable, _run(), directory=tmp_path).regression))
    assert kept.ops() == [] and [o.process for o in kept.faults()] == ["nemesis-0"]


def test_export_records_name_and_version_and_is_named_for_every_implementation_that_ran(tmp_path: Path) -> None:
    """Issue 31 item 6: ``double-holder-memconform-reference-…-908ec80d67`` was named for the
    implementation it blamed but ran OpenCode writers too (replay stopped with "peer
    'opencode' needs a path"), and its ``impls`` held kinds only."""
    run = _run()
    run.history.meta["impls"] = {"w0": "python", "w1": "opencode"}
    labels = {"python": REF, "opencode:/x/ocl-memory.mjs": "openclaude-memory 0.6.6"}
    dh = Finding("double-holder", "weakness", clause="S-INV-9", impl=REF, path="/s/.lock", evidence="w0 held it")
    path = Path(nx.export(dh, run, directory=tmp_path, labels=labels).regression)
    digest = file_stem(dh).rsplit("-", 1)[1]
    assert path.name == f"double-holder-memconform-reference-0-1-0-openclaude-memory-0-6-6-{digest}{nx.SUFFIX}"
    meta = json.loads(path.read_text().splitlines()[0])["meta"]
    assert meta["impls"] == {"w0": {"kind": "python", "name": "memconform-reference", "version": "0.1.0"},
                             "w1": {"kind": "opencode", "name": "openclaude-memory", "version": "0.6.6"}}
    assert "/x/" not in path.read_text()  # no path on the machine that found it
    loaded = nx.load(path)
    assert loaded.impls == {"w0": "python", "w1": "opencode"} and loaded.specs == ["python", "opencode"]


def test_load_refuses_what_is_not_a_nemesis_regression(tmp_path: Path) -> None:
    plain = tmp_path / "h.nemesis.jsonl"
    _run().history.save(plain)  # a history, but no finding in its meta
    for bad, why in ((tmp_path, "is a directory"), (tmp_path / "none.nemesis.jsonl", "no such file"),
                     (plain, "not a nemesis regression")):
        with pytest.raises(nx.NemesisFileError, match=why):
            nx.load(bad)


def test_replay_reports_k_of_n_and_the_finding_stands_when_reproduced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    path = nx.export(LOST, _run(), directory=tmp_path).regression
    seen_schedules: list[Any] = []

    def fake_run_nemesis(peers: list[Any], schedule: Any, **kw: Any) -> FakeRun:
        seen_schedules.append((schedule, [p.name for p in peers], kw.get("topics")))
        return _run()

    import memconform.harness.interleave.run as engine

    monkeypatch.setattr(engine, "run_nemesis", fake_run_nemesis)
    FINDINGS[:] = [[LOST], [], [LOST]]
    report = tmp_path / "r.json"
    rc = main(["replay", path, "--runs", "3", "--json", str(report), "--no-export"])
    out = capsys.readouterr().out
    assert "reproduced 2 of 3 runs" in out and "run 2/3: not reproduced" in out
    assert rc == 1  # the violation is still there
    assert len(seen_schedules) == 3
    schedule, specs, topics = seen_schedules[0]
    assert schedule.seed == 3 and schedule.faults[0].family == "kill" and specs == ["python"]
    assert topics == ("Alpha Notes",)
    data = json.loads(report.read_text())
    assert data["stats"]["reproduced"] == {path: "2 of 3"}
    FINDINGS[:] = [[], []]
    assert main(["replay", path, "--runs", "2", "--no-export"]) == 0
    assert "reproduced 0 of 2 runs" in capsys.readouterr().out


def test_replay_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "gone.nemesis.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file" in err[0]
    scenario = tmp_path / "a.json"
    scenario.write_text("{}")
    assert main(["replay", str(scenario), str(tmp_path / "gone.nemesis.jsonl")]) == 2
    assert "not both" in capsys.readouterr().err


def test_campaign_summary_lists_each_finding_with_families_rate_and_replay() -> None:
    from memconform.harness.interleave import campaign as camp

    dh = Finding("double-holder", "weakness", clause="S-INV-9", impl=REF, evidence="w4 held .lock …",
                 regression="r/double-holder.nemesis.jsonl")
    runs = [camp.Run("pi + reference", "stale-lock", 1, seconds=60.0, ops=900, faults=40, findings=[dh, dh]),
            camp.Run("all three", "all", 8, seconds=60.0, ops=800, faults=45, findings=[dh]),
            camp.Run(camp.REF_ALONE, "stale-lock", 1, seconds=30.0, ops=300, faults=20),
            camp.Run("all three", "kill", 2, error="RuntimeError: boom")]
    data = camp.summarise(runs, {"r/double-holder.nemesis.jsonl": "2 of 3"})
    assert data["peer_minutes"] == 2.0 and data["reference_minutes"] == 0.5
    (row,) = data["findings"]["peers"]
    assert row["count"] == 3 and row["per_minute"] == 1.5 and row["families"] == ["all", "stale-lock"]
    assert row["replay"] == "2 of 3" and data["findings"]["reference alone"] == []
    text = camp.render(data)
    assert "| double-holder | weakness |" in text and "2 of 3" in text and "RuntimeError: boom" in text


def test_bench_rows_put_the_mixes_side_by_side() -> None:
    from memconform.harness.bench.nemesis import render

    rows = [{"mix": m, "family": "all", "ops_per_s": 50.0, "faults_per_min": 41.5, "findings": {"weakness": 2},
             "kinds": ["double-holder"], "checker": ["linearizable"], "check_s": 0.2}
            for m in ("reference alone", "reference + pi + opencode")]
    lines = render(rows)
    assert lines[2].startswith("| all | reference alone | 50.0 | 41.5 | 0/0/2 | double-holder |")
    assert lines[3].startswith("| all | reference + pi + opencode |")


def test_older_summary_rows_merge_per_implementation_set_and_replay_matches_any_order() -> None:
    from memconform.harness.interleave import campaign as camp

    row = {"kind": "double-holder", "severity": "violation", "count": 1, "per_minute": 0.5,
           "families": ["stale-lock"], "mixes": ["all three"], "regression": "a", "example": "", "replay": ""}
    merged = camp.regroup([{**row, "impl": "b 1, a 2"}, {**row, "impl": "a 2, b 1", "regression": "c", "families": ["all"]}])
    assert len(merged) == 1 and merged[0]["count"] == 2 and merged[0]["per_minute"] == 1.0
    assert merged[0]["regressions"] == ["a", "c"] and merged[0]["families"] == ["all", "stale-lock"]
    assert nx.matches(Finding("double-holder", VIOLATION, impl="a 2, b 1"), {"kind": "double-holder", "impl": "b 1, a 2"})
    assert not nx.matches(Finding("double-holder", VIOLATION, impl="a 2"), {"kind": "double-holder", "impl": "b 1, a 2"})


def test_campaign_folders_merge_minutes_and_rates(tmp_path: Path) -> None:
    from memconform.harness.interleave import campaign as camp

    dh = Finding("double-holder", "weakness", impl=REF, evidence="…", regression="x/dh.nemesis.jsonl")
    for name, seconds in (("a", 60.0), ("b", 180.0)):
        data = camp.summarise([camp.Run("all three", "stale-lock", 1, seconds=seconds, findings=[dh])], {})
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(data))
    merged = camp.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m", tmp_path / "regs")
    assert merged["peer_minutes"] == 4.0 and merged["mixes"]["all three"]["runs"] == 2
    (row,) = merged["findings"]["peers"]
    assert row["count"] == 2 and row["per_minute"] == 0.5 and row["regressions"] == [str(tmp_path / "regs" / "dh.nemesis.jsonl")]
    assert (tmp_path / "m" / "summary.md").read_text().count("| double-holder |") == 1
