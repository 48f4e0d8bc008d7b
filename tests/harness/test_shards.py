"""``--shard K/N`` and ``report merge`` (issue 16 item 2): every scenario in exactly one shard,
parts balanced by recorded cost, and the merged report equal to the unsharded run's."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from memconform.harness import cli
from memconform.harness.gate import shards
from memconform.harness.gate.selection import BUILTIN
from memconform.harness.reports import merge
from memconform.harness.reports.envelope import SCHEMA_PATH

SCHEMA = json.loads(SCHEMA_PATH.read_text("utf-8"))
WRONG = ('{"id": "mine/wrong", "clauses": ["S-FMT-8"], "steps": [{"op": "to_slug", '
         '"args": {"topic": "A B"}, "expect": {"result": "nope"}}]}')
# a small corpus of its own (the format area and one planted failure): loading all 662
# scenarios five times would be most of the test's time
SELECT = ["--only-scenarios"]


def test_parse_accepts_k_of_n_and_refuses_the_rest() -> None:
    assert shards.parse("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "3", "a/b", "1/0", "-1/2"):
        with pytest.raises(argparse.ArgumentTypeError):
            shards.parse(bad)


def test_split_is_a_partition_balanced_by_cost_and_stable() -> None:
    costs = shards.load_costs()
    assert len(costs) >= 600  # the shipped cost file covers the corpus
    ids = sorted(costs)
    parts = shards.split(ids, 3, costs)
    assert sorted(i for p in parts for i in p) == ids
    loads = [sum(costs[i] for i in p) for p in parts]
    assert max(loads) - min(loads) <= max(costs.values())  # greedy bound: within one scenario
    assert shards.split(list(reversed(ids)), 3, costs) == parts  # order of discovery does not matter
    unknown = shards.split(["new/a", "new/b", *ids], 3, costs)  # a user's scenario gets the median cost
    assert sorted(i for p in unknown for i in p) == sorted(["new/a", "new/b", *ids])


def _run(tmp_path: Path, mine: Path, name: str, *extra: str) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    code = cli.main(["conformance", "--scenarios", str(mine), *SELECT, "--quiet", "--no-export",
                     "--json", str(out), *extra])
    assert code == 1  # the planted failure gates every run that holds it, and only the merge sees all
    data: dict[str, Any] = json.loads(out.read_text("utf-8"))
    return data


def test_merged_shards_equal_the_unsharded_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    shutil.copytree(BUILTIN / "format", mine / "format")
    (mine / "mine").mkdir(parents=True)
    (mine / "mine" / "wrong.json").write_text(WRONG)
    whole = _run(tmp_path, mine, "whole")
    paths = []
    for k in (1, 2, 3):
        out = tmp_path / f"shard{k}.json"
        cli.main(["conformance", "--scenarios", str(mine), *SELECT, "--quiet", "--no-export",
                  "--json", str(out), "--shard", f"{k}/3"])
        paths.append(out)
    sizes = [len(json.loads(p.read_text())["scenarios"]) for p in paths]
    assert all(sizes) and sum(sizes) == whole["stats"]["scenarios"]
    merged_json, xml, page = tmp_path / "m.json", tmp_path / "m.xml", tmp_path / "m.html"
    capsys.readouterr()
    code = cli.main(["report", "merge", *map(str, paths), "--json", str(merged_json), "--junit", str(xml),
                     "--html", str(page)])
    assert code == 1  # the merge job gates: the planted violation fails it
    merged = json.loads(merged_json.read_text("utf-8"))
    jsonschema.validate(merged, SCHEMA)
    shown = {k: v for k, v in merged["stats"].items() if k != "shards"}
    assert shown == whole["stats"], (shown, whole["stats"])
    assert merged["stats"]["shards"] == 3
    assert [s["id"] for s in merged["scenarios"]] == [s["id"] for s in whole["scenarios"]]
    assert merged["summary"] == whole["summary"] and merged["verdict"] == whole["verdict"] == "fail"
    assert "mine/wrong" in page.read_text() and 'failures="1"' in xml.read_text()
    printed = capsys.readouterr().out
    assert f"wrote JSON report {merged_json}" in printed and f"wrote HTML report {page}" in printed
    # a shard given twice overlaps: refused, one line, exit 2
    assert cli.main(["report", "merge", str(paths[0]), str(paths[0])]) == 2


def test_merge_refuses_reports_of_other_implementations() -> None:
    a = {"impls": [{"name": "a", "version": "1"}], "scenarios": [], "verdict": "pass"}
    b = {"impls": [{"name": "b", "version": "1"}], "scenarios": [], "verdict": "pass"}
    with pytest.raises(merge.MergeError, match="differs"):
        merge.merge([a, b])
