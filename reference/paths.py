"""Store locations, captured once from the environment (S-PATH-1..7).

Paths are composed with Node's POSIX ``path.join`` semantics, because composed paths appear in
observable strings (injection text, error messages).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache


def normalize(path: str) -> str:
    """Node ``path.posix.normalize``."""
    if path == "":
        return "."
    absolute = path.startswith("/")
    trailing = path.endswith("/")
    parts: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not absolute:
                parts.append("..")
            continue
        parts.append(seg)
    out = "/".join(parts)
    if not out and not absolute:
        out = "."
    if out and trailing:
        out += "/"
    return ("/" + out) if absolute else out


@lru_cache(maxsize=4096)
def join(*segments: str) -> str:
    """Node ``path.posix.join``: empty segments skipped, result normalised.

    Remembered: a write joins the same few paths about ten times.
    """
    joined = "/".join(s for s in segments if s != "")
    return normalize(joined) if joined else "."


def home_dir(env: Mapping[str, str]) -> str:
    """Node ``os.homedir()``: ``HOME`` when set (even empty, as libuv), else the passwd entry."""
    home = env.get("HOME")
    if home is not None:
        return home
    return pwd.getpwuid(os.getuid()).pw_dir


@dataclass(frozen=True)
class StorePaths:
    """Every fixed location of one installation (S-PATH-3), derived once at load time."""

    agent_dir: str
    shared_home: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StorePaths:
        env = os.environ if env is None else env
        agent = env.get("PI_CODING_AGENT_DIR")
        if agent is None:
            agent = join(home_dir(env), ".pi", "agent")
        shared_home = env.get("PI_SHARED_MEMORY_HOME")
        if shared_home is None:
            shared_home = home_dir(env)
        return cls(agent, shared_home)

    @property
    def local_dir(self) -> str:
        return join(self.agent_dir, "memory")

    @property
    def shared_dir(self) -> str:
        return join(self.shared_home, ".agents", "memory")

    @property
    def memory_rules(self) -> str:
        return join(self.agent_dir, "memory.jsonc")

    @property
    def legacy_rules(self) -> str:
        return join(self.local_dir, "RULES.jsonc")

    @property
    def legacy_rules_backup(self) -> str:
        return join(self.local_dir, "RULES.jsonc.bak")

    @property
    def handoff_file(self) -> str:
        return join(self.agent_dir, "HANDOFF.md")

    @property
    def legacy_handoff(self) -> str:
        return join(self.local_dir, "HANDOFF.md")

    @property
    def carry_over_sentinel(self) -> str:
        return join(self.local_dir, ".shared-dir-migrated")


def index_path(directory: str) -> str:
    return join(directory, "MEMORY.md")


def lock_path(directory: str) -> str:
    return join(directory, ".lock")


def tombstones_path(directory: str) -> str:
    return join(directory, ".ocl-removed")
