"""Offline proof: run the host command again inside a network namespace with only loopback.

Why: a host that quietly reached the network (a model list, an update check, a package
install) would pass here and hang or leak elsewhere.  ``unshare -n`` gives the run a
namespace whose only interface is ``lo``; the fake model listens on 127.0.0.1 inside it, so
any other address a host tries is unreachable and its step fails.  ``probe`` shows it: a
connection to a public address must fail before anything runs.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence

INSIDE_ENV = "MEMCONFORM_NETNS"
PROBE_ADDRESS = ("1.1.1.1", 80)


class NoNamespace(Exception):
    """The machine does not let us make a network namespace (not root, no unshare)."""


def inside() -> bool:
    return os.environ.get(INSIDE_ENV) == "1"


def probe() -> str:
    """Why a public address is unreachable here; raises if it is reachable."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(PROBE_ADDRESS)
    except OSError as e:
        return e.strerror or type(e).__name__
    finally:
        s.close()
    raise NoNamespace(f"{PROBE_ADDRESS[0]}:{PROBE_ADDRESS[1]} is reachable: this is not an offline namespace")


def reexec(argv: Sequence[str]) -> int:
    """Run ``python -m memconform.harness ARGV`` in a new network namespace with ``lo`` up."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        raise NoNamespace("unshare or ip is not installed")
    check = subprocess.run([unshare, "-n", "true"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise NoNamespace(f"unshare -n is not allowed here: {check.stderr.strip()[:200]}")
    cmd = [unshare, "-n", "sh", "-c", f'{ip} link set lo up && exec "$@"', "sh",
           sys.executable, "-m", "memconform.harness", *argv]
    return subprocess.run(cmd, env=os.environ | {INSIDE_ENV: "1"}, check=False).returncode
