"""docs/ci.md's workflow, run locally (issue 16 item 4, issue 22 item 7): every job of its one YAML
block, in order (the matrix values at once, as GitHub runs them); the ``run:`` steps as written
(bash, the workflow's env, ``${{ matrix.* }}`` filled in); the actions by local stand-ins —
checkout: a workspace, or for ``repository:`` a copy of this source tree; setup-node/setup-python:
the tools on this machine; upload/download-artifact: one folder per artifact name.  The wheel job
builds the wheel for real.  Every ``pip install`` line runs as written through pip's own parser
and resolver, with ``--dry-run --no-index --no-deps`` given as ``PIP_*`` variables: it must name a
file pip can install here, never a requirement pip would look for on an index; the gate then uses
this test environment's memconform.  The gate runs the reference (``IMPL=python``) on a small
selection (``GATE_ARGS``), so the merged report must hold that selection exactly once.  The
schedule-only campaign job (20 minutes of HypoFuzz, a Redis service) is not run, but its install
line is checked like the others, and so are the install lines of the document's shell blocks."""

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

from tests.harness.test_wheel import _copy_source

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ci.md"
SELECTION = "--run format/*"
EXPR = re.compile(r"\$\{\{\s*([a-z_.]+)\s*\}\}")
EVENT = re.compile(r"github\.event_name\s*==\s*'([a-z_]+)'")
# pip's own options, as environment variables: parse and resolve every argument, install nothing,
# look at no index (a requirement only an index could satisfy fails), ignore what is installed
PIP_CHECK = {"PIP_DRY_RUN": "1", "PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1", "PIP_IGNORE_INSTALLED": "1",
             "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text("utf-8"), re.S)


def workflow() -> dict[str, Any]:
    found = blocks("yaml")
    assert len(found) == 1, "docs/ci.md should hold one workflow, whole, in one yaml block"
    data: dict[str, Any] = yaml.safe_load(found[0])
    return data


def triggers(flow: dict[str, Any]) -> set[str]:
    on = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as true
    return set(on) if isinstance(on, dict | list) else {str(on)}


def fill(text: str, matrix: dict[str, Any]) -> str:
    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        assert name.startswith("matrix."), f"expression the local runner cannot fill: {name}"
        return str(matrix[name.removeprefix("matrix.")])

    return EXPR.sub(value, text)


def installs(script: str) -> bool:
    return re.search(r"\bpip install\b", script) is not None


def pip_check_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the machine's own ``PIP_*`` settings (find-links, index), plus the check."""
    return {k: v for k, v in env.items() if not k.startswith("PIP_")} | PIP_CHECK


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


class Runner:
    """Runs one job's steps in its own workspace; artifacts live under one folder per name."""

    def __init__(self, base: Path, env: dict[str, str]) -> None:
        self.base, self.env = base, env
        self.artifacts = base / "artifacts"
        self.log: list[str] = []

    def action(self, uses: str, given: dict[str, Any], work: Path) -> None:
        name = uses.split("@", 1)[0]
        if name == "actions/checkout" and "repository" in given:  # memconform's source
            _copy_source(work / str(given["path"]))
        elif name == "actions/checkout":
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
            one = "name" in given  # by name: the artifact's files land in path itself
            for art in sorted(self.artifacts.glob("*")):
                if fnmatch.fnmatch(art.name, pattern):
                    flat = one or given.get("merge-multiple")
                    shutil.copytree(art, dest if flat else dest / art.name, dirs_exist_ok=True)
        else:  # pragma: no cover - a new action in the doc needs a stand-in here
            raise AssertionError(f"no local stand-in for {uses}")
        self.log.append(f"uses {name}")

    def job(self, name: str, job: dict[str, Any], matrix: dict[str, Any], *, installs_only: bool = False) -> None:
        """Run the job; ``installs_only``: only its artifacts and its ``pip install`` lines."""
        work = self.base / f"{name}-{'-'.join(map(str, matrix.values())) or 'single'}"
        work.mkdir(parents=True)
        for step in job["steps"]:
            if "uses" in step:
                if not installs_only or step["uses"].startswith("actions/download-artifact"):
                    self.action(step["uses"], step.get("with", {}), work)
                continue
            script = fill(step["run"], matrix)
            if installs_only and not installs(script):
                continue
            env = pip_check_env(self.env) if installs(script) else self.env
            r = bash(script, work, env)
            self.log.append(f"run {step.get('name', script[:40])}: exit {r.returncode}")
            assert r.returncode == 0, f"{name} {matrix}: {step.get('name')}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
            if installs(script):
                assert "Would install memconform-" in r.stdout, r.stdout


def test_the_recipe_runs_locally_and_the_merge_holds_every_scenario_once(tmp_path: Path) -> None:
    flow = workflow()
    jobs = flow["jobs"]
    assert list(jobs) == ["wheel", "gate", "merge", "campaign"]
    uses = {s["uses"].split("@")[0] for j in jobs.values() for s in j["steps"] if "uses" in s}
    assert {"actions/setup-node", "actions/setup-python", "actions/upload-artifact"} <= uses
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_CORE", "GITHUB_"))}
    env |= {str(k): str(v) for k, v in flow.get("env", {}).items()}
    env |= {"IMPL": "python", "GATE_ARGS": SELECTION, "CI": "true",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md")}
    runner = Runner(tmp_path, env)
    runner.job("wheel", jobs["wheel"], {})
    wheels = list((runner.artifacts / "memconform-wheel").glob("memconform-*.whl"))
    assert len(wheels) == 1, wheels
    gate = jobs["gate"]
    assert gate["needs"] == "wheel"
    shards = gate["strategy"]["matrix"]["shard"]
    assert shards == [1, 2, 3]
    with ThreadPoolExecutor(max_workers=len(shards)) as pool:  # matrix jobs run at once, as on GitHub
        list(pool.map(lambda k: runner.job("gate", gate, {"shard": k}), shards))
    assert set(jobs["merge"]["needs"]) == {"wheel", "gate"}
    runner.job("merge", jobs["merge"], {})
    merged = json.loads((runner.artifacts / "memconform-report" / "merged.json").read_text("utf-8"))
    ids = [s["id"] for s in merged["scenarios"]]
    assert ids and len(ids) == len(set(ids)) and all(i.startswith("format/") for i in ids)
    assert merged["stats"]["shards"] == 3 and merged["verdict"] == "pass"
    assert merged["stats"]["scenarios"] == merged["stats"]["passed"]
    assert (runner.artifacts / "memconform-report" / "merged.html").is_file()
    assert "### memconform report merge" in (tmp_path / "step-summary.md").read_text("utf-8")

    campaign = jobs["campaign"]
    assert campaign["needs"] == "wheel" and EVENT.findall(campaign["if"]) == ["schedule"]
    runner.job("campaign", campaign, {"worker": 1}, installs_only=True)
    assert sum(line.startswith("run Install memconform") for line in runner.log) == 3 + 1 + 1

    shell = [ln for block in blocks("sh") for ln in block.splitlines() if installs(ln)]
    assert shell, "the campaign section shows how to install the extra"
    work = tmp_path / "shell"
    runner.action("actions/download-artifact", {"name": "memconform-wheel", "path": "wheel/"}, work)
    for line in shell:
        r = bash(line, work, pip_check_env(env))
        assert r.returncode == 0 and "Would install memconform-" in r.stdout, f"{line}\n{r.stdout}\n{r.stderr}"


def test_every_event_a_job_waits_for_is_a_trigger() -> None:
    flow = workflow()
    waited = {e for job in flow["jobs"].values() for e in EVENT.findall(str(job.get("if", "")))}
    assert waited == {"schedule"}
    assert waited <= triggers(flow), f"jobs wait for {waited}, the workflow triggers on {triggers(flow)}"
    assert all(entry.get("cron") for entry in flow.get("on", flow.get(True))["schedule"])


@pytest.mark.parametrize(("line", "why"), [
    ('python -m pip install "$MEMCONFORM[campaign]"', "Invalid requirement"),  # the recipe before issue 22
    ('python -m pip install "$MEMCONFORM"', "No matching distribution"),  # a guess at an index
])
def test_the_install_check_refuses_what_pip_would_refuse(tmp_path: Path, line: str, why: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_CORE"))}
    env |= {"MEMCONFORM": "memconform>=0.1",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    r = bash(line, tmp_path, pip_check_env(env))
    assert r.returncode != 0 and why in r.stderr, r.stderr
