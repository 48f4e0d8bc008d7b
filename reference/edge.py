"""The speed paths an entry point chooses: the Fs and the index engine (docs/ARCHITECTURE.md §5).

A ``Store`` alone runs the plain S-IDX scans over the plain ``Fs``: the definition, and what
the tests exercise by default.  ``serve``, the CLI and the bench run the fast paths, built
here from the environment they start with (read when they build the store, never at import):

- ``MEMCONFORM_DIRWATCH=0``: list the directory at every maintenance instead of asking a
  watch (``reference.dirwatch.WatchingFs``);
- ``MEMCONFORM_INDEX=plain``: the plain scans (``PlainEngine``) instead of the index views
  (``reference.index_view.ViewEngine``), e.g. to run the corpus on the plain code.

Either way the bytes are the same; property tests compare each fast path with the plain one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from .clock import Clock
from .dirwatch import WatchingFs
from .fs import Fs
from .index_engine import IndexEngine, PlainEngine
from .index_view import ViewEngine
from .store import Store, stderr_diagnostics


def edge_fs(env: Mapping[str, str]) -> Fs:
    """A ``WatchingFs`` unless ``MEMCONFORM_DIRWATCH=0``."""
    return Fs() if env.get("MEMCONFORM_DIRWATCH", "1") == "0" else WatchingFs()


def edge_index_engine(env: Mapping[str, str]) -> IndexEngine:
    """A ``ViewEngine`` unless ``MEMCONFORM_INDEX=plain``."""
    return PlainEngine() if env.get("MEMCONFORM_INDEX", "view") == "plain" else ViewEngine()


def edge_store(
    env: Mapping[str, str] | None = None,
    *,
    clock: Clock | None = None,
    diagnostics: Callable[[str], None] = stderr_diagnostics,
) -> Store:
    """The store an entry point runs: ``env`` (default: the process's) names it and its paths."""
    source = os.environ if env is None else env
    return Store(
        env,
        fs=edge_fs(source),
        clock=clock,
        diagnostics=diagnostics,
        index_engine=edge_index_engine(source),
    )
