"""The gate from a built wheel, as an implementation's CI installs it (issue 16 item 1).

Builds the wheel from a copy of the source tree (nothing written into the clone), installs it
into a fresh virtual environment and runs ``memconform conformance --impl python`` from an
empty directory: the corpus, schemas, ``KNOWN_DEVIATIONS.md`` and drivers must come from the
package.  ``import harness`` / ``import reference`` must fail there (one ``memconform``
namespace).  The new venv has no pip and no index access: the wheel goes in with this venv's
pip (``pip --python``, ``--no-deps``) and the dependencies are this venv's, seen through a
``.pth`` line — a plain path entry, so this venv's editable-install hook is not run and the
clone stays invisible.  Building needs the build backend from the index (build isolation).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP_COPY = {".git", ".venv", "build", "reports", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis",
             "__pycache__", "htmlcov", "tests", "benchmarks"}
TIMINGS: dict[str, float] = {}


def _copy_source(target: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        # the output folders are skipped at the top only: harness/reports/ is source
        top = Path(folder) == ROOT
        return {n for n in names if (top and n in SKIP_COPY) or n.endswith(".egg-info")
                or n in {"__pycache__", ".pytest_cache", ".mypy_cache"}}

    shutil.copytree(ROOT, target, symlinks=True, ignore=ignore)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "COV_CORE", "PYTEST", "MEMCONFORM_"))}
    env.update(extra)
    return env


def readme_wheel_command() -> list[str]:
    """The wheel build command README.md gives (``python -m pip wheel …``), split into words."""
    text = " ".join((ROOT / "README.md").read_text().split())
    match = re.search(r"`(python -m pip wheel [^`]*)`", text)
    assert match, "README.md no longer says how to build the wheel"
    return match.group(1).split()


def test_readme_wheel_command_names_the_project_folder() -> None:
    """The path README builds from is the top of a clone (it holds pyproject.toml), not the
    ``memconform/`` namespace folder inside it."""
    command = readme_wheel_command()
    assert (ROOT / command[-1] / "pyproject.toml").is_file(), command


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the built wheel installed (plus this venv's dependencies)."""
    base = tmp_path_factory.mktemp("wheel")
    src, env_dir = base / "src", base / "venv"
    _copy_source(src)
    env = _clean_env(PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    t0 = time.monotonic()
    # README's own command, as written, in the top folder of the clone (issue 31 item 1: it
    # named ./memconform, the namespace folder, which pip refuses as "not installable")
    command = readme_wheel_command()
    build = subprocess.run([sys.executable, *command[1:], "-v"], cwd=src, capture_output=True, text=True,
                           env=env, timeout=300)
    TIMINGS["build"] = time.monotonic() - t0
    assert build.returncode == 0, " ".join(command) + "\n" + build.stdout + build.stderr
    backend = build.stdout + build.stderr  # -v: the build backend's own output
    warned = [ln for ln in backend.splitlines() if "Deprecat" in ln or "BuildBackendWarning" in ln]
    assert not warned, "\n".join(warned[:5])  # pyproject free of deprecation warnings
    wheels = list((src / command[command.index("--wheel-dir") + 1]).glob("memconform-*.whl"))
    assert len(wheels) == 1, wheels
    t0 = time.monotonic()
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                              str(wheels[0])], capture_output=True, text=True, env=env, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "zz_memconform_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    TIMINGS["install"] = time.monotonic() - t0
    return env_dir


def test_gate_runs_from_the_wheel_in_an_empty_directory(installed: Path, tmp_path: Path) -> None:
    work = tmp_path / "empty"
    work.mkdir()
    out = tmp_path / "out"
    t0 = time.monotonic()
    run = subprocess.run(
        [str(installed / "bin" / "memconform"), "conformance", "--impl", "python", "--parallel", "2", "--quiet",
         "--json", str(out / "r.json"), "--html", str(out / "r.html")],
        cwd=work, capture_output=True, text=True, env=_clean_env(CI="1"), timeout=600,
    )
    TIMINGS["conformance"] = time.monotonic() - t0
    print(f"wheel timings (s): {', '.join(f'{k} {v:.1f}' for k, v in TIMINGS.items())}")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    data = json.loads((out / "r.json").read_text())
    assert data["stats"]["scenarios"] == data["stats"]["passed"] >= 662, data["stats"]
    site = str(installed / "lib")
    assert all(s["path"].startswith(site) for s in data["scenarios"]), data["scenarios"][0]["path"]
    assert f"wrote JSON report {out / 'r.json'}" in run.stdout
    assert (out / "r.html").read_text().startswith("<!doctype html>")
    assert sorted(os.listdir(work)) == []  # nothing written into the working directory


def test_one_namespace_only(installed: Path, tmp_path: Path) -> None:
    python = str(installed / "bin" / "python")
    for name in ("harness", "reference"):
        r = subprocess.run([python, "-c", f"import {name}"], cwd=tmp_path, capture_output=True, text=True,
                           env=_clean_env())
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, (name, r.stderr)
    probe = ("import memconform.harness.gate.regressions as r, memconform.harness.gate.scenarios as s; "
             "print(s.SCENARIOS_DIR); print(r.DEFAULT_DIR)")
    r = subprocess.run([python, "-c", probe], cwd=tmp_path, capture_output=True, text=True, env=_clean_env(), check=True)
    corpus, regressions = r.stdout.split()
    assert corpus.startswith(str(installed)) and (Path(corpus) / "KNOWN_DEVIATIONS.md").is_file()
    assert regressions == "memconform-regressions"  # exports land in the working directory, not site-packages
    serve = subprocess.run([python, "-m", "memconform.reference", "serve"], input='{"id":1,"op":"hello"}\n',
                           cwd=tmp_path, capture_output=True, text=True, env=_clean_env(), timeout=60)
    assert '"ok": true' in serve.stdout.replace('"ok":true', '"ok": true'), serve.stdout + serve.stderr


def test_the_shipped_example_driver_passes_the_shared_store_profile_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    """Issue 22, done-when: a driver that rewords every result and declares outcome kinds
    (``memconform example-driver``) passes the ``shared-store`` profile with 0 failures from the
    installed wheel, with its own ``--deviations`` file."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    memconform = str(installed / "bin" / "memconform")
    env = _clean_env(MEMCONFORM_PYTHON=str(installed / "bin" / "python"))
    paths = {}
    for flag in ("", "--deviations"):
        r = subprocess.run([memconform, "example-driver", *filter(None, [flag])], cwd=tmp_path, capture_output=True,
                           text=True, env=env, check=True)
        paths[flag] = r.stdout.strip()
        assert paths[flag].startswith(str(installed / "lib")) and Path(paths[flag]).is_file(), paths[flag]
    out = tmp_path / "example.json"
    t0 = time.monotonic()
    run = subprocess.run(
        [memconform, "conformance", "--impl", f"node:{paths['']}", "--deviations", paths["--deviations"],
         "--parallel", "2", "--quiet", "--no-export", "--json", str(out)],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600,
    )
    TIMINGS["example-driver"] = time.monotonic() - t0
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    data = json.loads(out.read_text())
    assert {s["id"].split("/", 1)[0] for s in data["scenarios"]} == {"shared-store"}  # the profile its hello declares
    stats = data["stats"]
    assert stats["failed"] == stats["errors"] == stats["xpass"] == 0 and stats["passed"] >= 160, stats
    assert data["impls"][0]["name"] == "memconform-example-reworded", data["impls"]
