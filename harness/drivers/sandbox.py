"""Temporary store roots, the environment each implementation reads, and store snapshots.

A sandbox has two roots: ``agent/`` (the agent dir: ``memory.jsonc``, ``HANDOFF.md``,
``memory/``) and ``home/`` (the shared store is ``home/.agents/memory/``), as docs/ARCHITECTURE.md §4 fixes.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

SNAPSHOT_FIFO = b"<fifo>"
SNAPSHOT_SOCKET = b"<socket>"
SNAPSHOT_DIR = b"<dir>"

# every temporary folder this process made and has not removed yet: an interrupted run
# removes them all (``remove_all``), so Ctrl-C leaves no ``memconform-*`` behind
_LIVE: set[Path] = set()
_LIVE_LOCK = threading.Lock()


def temp_dir(prefix: str = "memconform-", parent: str | os.PathLike[str] | None = None) -> Path:
    """A new private folder (as ``tempfile.mkdtemp``) that ``remove_all`` knows about
    (``forget`` once removed).

    The name is recorded *before* the folder is made: Python raises ``KeyboardInterrupt``
    between any two bytecodes, so a Ctrl-C just after ``mkdtemp`` returned (races starts its
    next run's sandbox right after saying what it found) left an empty ``memconform-*``
    nobody knew about; ``os.mkdir`` itself is one call, done or not."""
    base = Path(parent if parent is not None else tempfile.gettempdir())
    names = tempfile._get_candidate_names()  # type: ignore[attr-defined]  # mkdtemp's own names
    for _ in range(tempfile.TMP_MAX):
        path = base / f"{prefix}{next(names)}"
        with _LIVE_LOCK:
            _LIVE.add(path)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            forget(path)
            continue
        return path
    raise FileExistsError(f"no unused name for a temporary folder in {base}")


def forget(path: Path) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(path)


def remove_temp(path: Path) -> None:
    """Remove a folder made by ``temp_dir``; one a process still writes into (a writer killed
    by Ctrl-C a moment ago) stays known, so ``remove_all`` tries it again after the kill."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        forget(path)


def remove_all() -> list[Path]:
    """Remove every temporary folder this process still holds; the ones removed."""
    with _LIVE_LOCK:
        live = sorted(_LIVE)
        _LIVE.clear()
    for path in live:
        shutil.rmtree(path, ignore_errors=True)
    return live


@dataclass
class Sandbox:
    root: Path

    @classmethod
    def create(cls, parent: str | os.PathLike[str] | None = None) -> Sandbox:
        root = temp_dir("memconform-", parent)
        (root / "agent").mkdir()
        (root / "home").mkdir()
        return cls(root)

    @property
    def agent_dir(self) -> Path:
        return self.root / "agent"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def local_dir(self) -> Path:
        return self.agent_dir / "memory"

    @property
    def shared_dir(self) -> Path:
        return self.home / ".agents" / "memory"

    def env(self, tz: str = "UTC", base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for any implementation: pi, OpenCode and the reference alike."""
        env = dict(os.environ if base is None else base)
        env.update(
            {
                "PI_CODING_AGENT_DIR": str(self.agent_dir),
                "PI_SHARED_MEMORY_HOME": str(self.home),
                "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home / ".config"),
                "OCL_SHARED_MEMORY_HOME": str(self.home),
                "TZ": tz,
            }
        )
        return env

    def placeholders(self) -> dict[str, str]:
        """What a scenario's ``${AGENT}`` … ``${ROOT}`` stand for here, deeper roots first
        (so a normalised path names its nearest root); ``${PID}`` is the driver's."""
        return {
            "AGENT": str(self.agent_dir),
            "HOME": str(self.home),
            "LOCAL": str(self.local_dir),
            "SHARED": str(self.shared_dir),
            "ROOT": str(self.root),
        }

    def path(self, rel: str) -> Path:
        return self.root / rel

    def put(self, rel: str, content: str | bytes) -> Path:
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
        p.write_bytes(data)
        return p

    def snapshot(self) -> dict[str, bytes]:
        return snapshot(self.root)

    def remove(self) -> None:
        remove_temp(self.root)


def snapshot(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """``{relative path: content}`` of a tree; symlinks as ``-> target``, specials as markers."""
    out: dict[str, bytes] = {}
    base = Path(root)
    for dirpath, dirnames, filenames in os.walk(base):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(base).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = b"-> " + os.fsencode(os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = SNAPSHOT_DIR
            elif stat.S_ISFIFO(st.st_mode):
                out[rel] = SNAPSHOT_FIFO
            elif stat.S_ISSOCK(st.st_mode):
                out[rel] = SNAPSHOT_SOCKET
            elif stat.S_ISREG(st.st_mode):
                try:
                    out[rel] = p.read_bytes()
                except PermissionError:
                    out[rel] = b"<unreadable>"
    return out
