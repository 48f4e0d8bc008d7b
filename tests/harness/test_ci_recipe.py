"""docs/ci.md's workflow, run locally (issue 16 item 4): every job of the first YAML block (the
matrix values at once, as GitHub runs them, then the merge job); the ``run:`` steps as written (bash, the workflow's env, ``${{ matrix.* }}``
filled in); the actions by local stand-ins — checkout: a workspace; setup-node/setup-python: the
tools on this machine; upload/download-artifact: one folder per artifact name — and the install
step by this test environment's memconform.  The gate runs the reference (``IMPL=python``) on a
small selection (``GATE_ARGS``), so the merged report must hold that selection exactly once."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ci.md"
SELECTION = "--run format/*"
EXPR = re.compile(r"\$\{\{\s*([a-z_.]+)\s*\}\}")


def workflow() -> dict[str, Any]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text("utf-8"), re.S)
    assert blocks, "docs/ci.md has no yaml block"
    data: dict[str, Any] = yaml.safe_load(blocks[0])
    return data


def fill(text: str, matrix: dict[str, Any]) -> str:
    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        assert name.startswith("matrix."), f"expression the local runner cannot fill: {name}"
        return str(matrix[name.removeprefix("matrix.")])

    return EXPR.sub(value, text)


class Runner:
    """Runs one job's steps in its own workspace; artifacts live under one folder per name."""

    def __init__(self, base: Path, env: dict[str, str]) -> None:
        self.base, self.env = base, env
        self.artifacts = base / "artifacts"
        self.log: list[str] = []

    def action(self, uses: str, given: dict[str, Any], work: Path) -> None:
        name = uses.split("@", 1)[0]
        if name == "actions/checkout":
            (work / "extensions").mkdir(parents=True, exist_ok=True)  # the implementation's checkout
        elif name in ("actions/setup-node", "actions/setup-python"):
            tool = "node" if name.endswith("node") else "python3"
            assert shutil.which(tool), f"{tool} missing for {name}"
        elif name == "actions/upload-artifact":
            source = work / str(given["path"])
            target = self.artifacts / str(given["name"])
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif name == "actions/download-artifact":
            pattern = str(given.get("pattern", given.get("name", "*")))
            dest = work / str(given["path"])
            for art in sorted(self.artifacts.glob("*")):
                if fnmatch.fnmatch(art.name, pattern):
                    shutil.copytree(art, dest if given.get("merge-multiple") else dest / art.name, dirs_exist_ok=True)
        else:  # pragma: no cover - a new action in the doc needs a stand-in here
            raise AssertionError(f"no local stand-in for {uses}")
        self.log.append(f"uses {name}")

    def job(self, name: str, job: dict[str, Any], matrix: dict[str, Any]) -> None:
        work = self.base / f"{name}-{'-'.join(map(str, matrix.values())) or 'single'}"
        work.mkdir(parents=True)
        for step in job["steps"]:
            if "uses" in step:
                self.action(step["uses"], step.get("with", {}), work)
                continue
            if step.get("name") == "Install memconform":  # stand-in: this environment's memconform
                self.log.append("install (local)")
                continue
            script = fill(step["run"], matrix)
            r = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=work, env=self.env,
                               capture_output=True, text=True, timeout=300)
            self.log.append(f"run {step.get('name', script[:40])}: exit {r.returncode}")
            assert r.returncode == 0, f"{name} {matrix}: {step.get('name')}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


def test_the_recipe_runs_locally_and_the_merge_holds_every_scenario_once(tmp_path: Path) -> None:
    flow = workflow()
    assert set(flow["jobs"]) == {"gate", "merge"}
    uses = {s["uses"].split("@")[0] for j in flow["jobs"].values() for s in j["steps"] if "uses" in s}
    assert {"actions/setup-node", "actions/setup-python", "actions/upload-artifact"} <= uses
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_CORE", "GITHUB_"))}
    env |= {str(k): str(v) for k, v in flow.get("env", {}).items()}
    env |= {"IMPL": "python", "GATE_ARGS": SELECTION, "CI": "true",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md")}
    runner = Runner(tmp_path, env)
    gate = flow["jobs"]["gate"]
    shards = gate["strategy"]["matrix"]["shard"]
    assert shards == [1, 2, 3]
    with ThreadPoolExecutor(max_workers=len(shards)) as pool:  # matrix jobs run at once, as on GitHub
        list(pool.map(lambda k: runner.job("gate", gate, {"shard": k}), shards))
    assert flow["jobs"]["merge"]["needs"] == "gate"
    runner.job("merge", flow["jobs"]["merge"], {})
    merged = json.loads((runner.artifacts / "memconform-report" / "merged.json").read_text("utf-8"))
    ids = [s["id"] for s in merged["scenarios"]]
    assert ids and len(ids) == len(set(ids)) and all(i.startswith("format/") for i in ids)
    assert merged["stats"]["shards"] == 3 and merged["verdict"] == "pass"
    assert merged["stats"]["scenarios"] == merged["stats"]["passed"]
    assert (runner.artifacts / "memconform-report" / "merged.html").is_file()
    assert "### memconform report merge" in (tmp_path / "step-summary.md").read_text("utf-8")
