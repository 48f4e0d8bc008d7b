"""OpenCode, headless (``opencode run --format json``), with one plugin listed in its config.

The cross-host script runs OpenCode this way; scenarios and the session machine run it as a
server (``opencode_serve``, the same configuration), which can compact.

Why one process per prompt: ``opencode run`` runs one message and exits; the next prompt of
the same session continues it (``--continue``), a ``session`` action starts a new one.  The
plugin is copied into the project's ``.opencode/plugins`` (with its sibling ``.mjs`` files:
it imports them) and named in ``opencode.json`` (``.mjs`` is not auto-loaded).  OpenCode
installs ``@opencode-ai/plugin`` into every config dir it uses, which offline waits about
70 s to fail, so the pinned package is copied there first.  Every home, config, data, cache
and state dir is the sandbox's; models, updates, LSP downloads, sharing and the default
plugins are off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .cache import opencode_binary, opencode_plugin_deps
from .pi import CONTEXT_WINDOW, HostError

OFF = ("OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_LSP_DOWNLOAD",
       "OPENCODE_DISABLE_SHARE", "OPENCODE_DISABLE_CLAUDE_CODE", "OPENCODE_DISABLE_DEFAULT_PLUGINS")


@dataclass
class OpenCodeSession:
    """OpenCode runs in ``workdir`` with the plugin at ``plugin``; one ``prompt`` per run."""

    plugin: Path
    home: Path
    workdir: Path
    base_url: str
    timeout: float = 120.0
    events: list[dict[str, Any]] = field(default_factory=list)
    _continue: bool = False
    _stderr: IO[str] | None = None

    @property
    def config_home(self) -> Path:
        return self.home / ".config"

    def configure(self) -> None:
        plugins = self.workdir / ".opencode" / "plugins"
        plugins.mkdir(parents=True, exist_ok=True)
        for sibling in self.plugin.parent.glob("*.mjs"):
            shutil.copy(sibling, plugins / sibling.name)
        deps = opencode_plugin_deps()
        for dest in (self.workdir / ".opencode", self.config_home / "opencode"):
            dest.mkdir(parents=True, exist_ok=True)
            for item in ("package.json", "package-lock.json"):
                if (deps / item).exists():
                    shutil.copy(deps / item, dest / item)
            if not (dest / "node_modules").exists():
                (dest / "node_modules").symlink_to(deps / "node_modules")  # read-only use: no copy of 64 MB
        model = {"name": "Fake Model", "tool_call": True, "limit": {"context": CONTEXT_WINDOW, "output": 4096}}
        config = {
            "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
            "model": "fake/fake-model", "small_model": "fake/fake-model", "enabled_providers": ["fake"],
            "permission": {"*": "allow"}, "plugin": [f"./.opencode/plugins/{self.plugin.name}"],
            "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                                  "options": {"baseURL": self.base_url, "apiKey": "fake-key"},
                                  "models": {"fake-model": model}}},
        }
        (self.workdir / "opencode.json").write_text(json.dumps(config, indent=1))
        if not (self.workdir / ".git").exists():
            subprocess.run(["git", "init", "-q", str(self.workdir)], check=False, capture_output=True)

    def env(self) -> dict[str, str]:
        home = str(self.home)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "OPENCODE_TEST_HOME": home,
               "TZ": "UTC", "LANG": "C.UTF-8", "XDG_CONFIG_HOME": str(self.config_home),
               "XDG_DATA_HOME": home + "/.local/share", "XDG_CACHE_HOME": home + "/.cache",
               "XDG_STATE_HOME": home + "/.local/state", "OCL_SHARED_MEMORY_HOME": home,
               "PI_SHARED_MEMORY_HOME": home}
        return env | {k: "1" for k in OFF}

    def start(self, stderr_path: Path) -> None:
        """A new session: the next prompt does not continue the previous one."""
        self.configure()
        self._stderr = stderr_path.open("a", encoding="utf-8")
        self._continue = False

    def prompt(self, text: str) -> None:
        cmd = [str(opencode_binary()), "run", "--format", "json"] + (["--continue"] if self._continue else []) + [text]
        try:
            done = subprocess.run(cmd, cwd=self.workdir, env=self.env(), capture_output=True, text=True,
                                  timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired:
            raise HostError(f"opencode: the prompt did not finish within {self.timeout:.0f} s") from None
        if self._stderr is not None:
            self._stderr.write(done.stderr)
            self._stderr.flush()
        for line in done.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                self.events.append(event)
        if done.returncode != 0:
            tail = " | ".join(done.stderr.strip().splitlines()[-2:])
            raise HostError(f"opencode run exited {done.returncode}: {tail}")
        self._continue = True

    def ready(self) -> None:
        """Nothing runs between prompts: each ``opencode run`` starts and ends its process."""

    def new_session(self) -> None:
        """The next prompt starts a new session (no ``--continue``)."""
        self._continue = False

    def compact(self) -> dict[str, Any]:
        raise HostError("opencode run has no manual compaction command")

    def end(self) -> int:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        return 0
