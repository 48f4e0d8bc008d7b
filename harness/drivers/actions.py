"""What the harness itself does to a sandbox: wipe it, lay out a scenario's ``given``, and
perform the file actions a step may name (``put_file``, ``plant_lock`` …).

``advance_clock`` is a file action too, but it moves the driver's clock: the runner does it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from ..gate.scenarios import Given, Step, content_bytes
from ..oracles.spec import LOCK_NAME
from .procs import dead_pid
from .sandbox import Sandbox

ROOTS = ("agent", "home")


def wipe(sandbox: Sandbox) -> None:
    """Back to the two empty roots, whatever a scenario left (read-only dirs included)."""
    for sub in ROOTS:
        p = sandbox.root / sub
        if p.exists() or p.is_symlink():
            _make_writable(p)
            shutil.rmtree(p, ignore_errors=True)
        p.mkdir()
    for extra in sandbox.root.iterdir():
        if extra.name not in ROOTS:
            if extra.is_dir() and not extra.is_symlink():
                shutil.rmtree(extra, ignore_errors=True)
            else:
                extra.unlink()


def _make_writable(path: Path) -> None:
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            p = Path(dirpath) / d
            if not p.is_symlink():
                os.chmod(p, 0o755)


def place_given(sandbox: Sandbox, given: Given) -> None:
    """The sandbox a scenario starts from: directories, files, FIFOs, symlinks."""
    root = sandbox.root
    for d in given.dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
    for rel, content in given.files.items():
        sandbox.put(rel, content_bytes(content))
    for rel in given.fifos:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(p)
    for rel, target in given.symlinks.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)


def perform(sandbox: Sandbox, step: Step, now_ms: Callable[[], int], driver_pid: int) -> None:
    """One file action other than ``advance_clock``; ``now_ms`` reads the scenario's clock."""
    op, args = step.op, step.args
    p = sandbox.root / args["path"] if "path" in args else sandbox.root / args["dir"] / LOCK_NAME
    if op == "put_file":
        sandbox.put(args["path"], content_bytes(args["content"]))
        if "mode" in args:
            os.chmod(p, int(args["mode"], 8))
        if "age_seconds" in args:
            t = now_ms() / 1000 - float(args["age_seconds"])
            os.utime(p, (t, t), follow_symlinks=False)
    elif op == "delete_file":
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
    elif op == "mkfifo":
        p.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(p)
    elif op == "mkdir":
        p.mkdir(parents=True, exist_ok=True)
    elif op == "chmod":
        os.chmod(p, int(args["mode"], 8))
    elif op == "symlink":
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(args["target"], p)
    elif op == "plant_lock":
        p.parent.mkdir(parents=True, exist_ok=True)
        age = float(args.get("age_seconds", 0))
        pid = args.get("pid", "dead")
        if "content" not in args:  # spawning the dead pid takes time: stamp afterwards
            pid = driver_pid if pid == "self" else dead_pid() if pid == "dead" else pid
        created = now_ms() - int(age * 1000)
        content = args.get("content", f"{pid}\t{created}\tplanted")
        p.write_bytes(content.encode("utf-8"))
        os.utime(p, ns=(created * 1_000_000, created * 1_000_000))  # exact: ages compare to the ms
    else:
        raise ValueError(f"not a sandbox file action: {op!r}")
