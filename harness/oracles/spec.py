"""Names and texts SPEC.md fixes, spelled once for every oracle and fault campaign.

Written from SPEC, not imported from ``reference/``: a renamed lock or a changed initial
index in the reference must fail the oracles that compare against these.
"""

from __future__ import annotations

import re

INDEX_NAME = "MEMORY.md"
LOCK_NAME = ".lock"
TOMBSTONES = ".ocl-removed"  # S-TOMB-1: the shared store's removal list
SENTINEL = ".shared-dir-migrated"  # S-MIGRATE: carry-over done
INITIAL_INDEX = "# Memory Index\n\n"  # S-WRITE-5: the index a first write starts from
FRONTMATTER_KEYS = ("name:", "description:", "last_updated:", "created:")

# S-IO-4: a temporary is ``<target>.tmp-<pid>-<token>``; group 1 is the writer's pid.
TEMP_NAME = re.compile(r"\.tmp-(\d+)-")
# The whole suffix of such a name (tokens are lowercase base 36, a peer may add ``-``).
TEMP_SUFFIX = re.compile(TEMP_NAME.pattern + r"[0-9a-z-]+$")
# S-LOCK-3: a lock's content starts with its owner's pid (``pid\tms\ttoken``).
LOCK_PID = re.compile(rb"^\s*([0-9]+)")
