"""Arguments shared by several subcommands."""

from __future__ import annotations

import argparse

from ..peers import DEFAULT_TIMEOUT


def add_impl_arguments(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    helptext = "python | pi:<memory-core.mjs> | opencode:<ocl-memory.mjs>"
    if many:
        p.add_argument("--impl", action="append", default=[], help=helptext + " (repeatable)")
    else:
        p.add_argument("--impl", default="python", help=helptext)
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="per-op timeout in seconds")
    p.add_argument("--validate-protocol", action="store_true", help="check every message against the schema")
