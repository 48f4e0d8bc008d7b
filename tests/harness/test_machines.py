"""The state machines under the ``ci`` profile, the regression export, and what they found.

Each machine runs with a fresh seed (printed on failure) and exports into a temporary
directory, never into the repository.  The last tests pin the reference weaknesses the
rollback and differential machines found; each is ``xfail(strict=True)`` so that fixing one
makes it fail and the matching allowance (``rollback.py``, labelled KNOWN) can be removed.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memconform.harness import cli
from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate.scenarios import load_file
from memconform.harness.machines import IN_PROCESS, load
from memconform.harness.machines.base import EXPORT_ENV, run_machine
from memconform.harness.machines.differential import (
    DifferentialMachine,
    _Pool,
    configure_peer,
    current_peer,
)
from memconform.harness.machines.store_shadow import StoreShadowMachine
from memconform.harness.oracles.invariants import check_store
from memconform.reference.errors import NodeError
from memconform.reference.fs import Fs
from memconform.reference.store import Store
from tests.conftest import StoreEnv


@pytest.fixture
def export_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "regressions"
    monkeypatch.setenv(EXPORT_ENV, str(out))
    return out


@pytest.mark.parametrize("name", IN_PROCESS)
def test_machine(name: str, export_dir: Path) -> None:
    machine = load(name)
    machine.stats.reset()
    stats = run_machine(machine)
    rate = stats.steps / stats.seconds if stats.seconds else 0.0
    print(f"{name}: {stats.examples} examples, {stats.steps} steps, {rate:.0f} steps/s, "
          f"{stats.executed_share:.1%} executed")
    assert stats.executed_share >= 0.9, stats.outcomes.most_common()
    assert not export_dir.exists(), "a passing run exported something"


def test_store_machine_keeps_its_registered_name() -> None:
    """The module is named for the shadow it compares with; ``fuzz --machine store_model``,
    exported file names and rerun commands keep the registered name."""
    assert load("store_model") is StoreShadowMachine and StoreShadowMachine.NAME == "store_model"


def test_store_machine_through_a_driver(export_dir: Path) -> None:
    """The store machine's protocol path (what drives pi:), on ``python -m memconform.reference serve``:
    one pooled driver, ``reset`` between examples, the shadow's texts and files exactly."""
    from memconform.harness.machines import unbind

    StoreShadowMachine.target_spec = PeerSpec("python")
    try:
        StoreShadowMachine.stats.reset()
        stats = run_machine(StoreShadowMachine, max_examples=10)
    finally:
        unbind()
    assert StoreShadowMachine.target_spec is None
    assert stats.steps > 0 and stats.executed_share >= 0.9


@pytest.fixture
def peer_pool() -> Iterator[None]:
    yield
    configure_peer(None)
    _Pool.close()


def test_differential_machine_on_the_reference_against_itself(export_dir: Path, peer_pool: None) -> None:
    """The differential machine's own plumbing, on two reference drivers (no peer needed)."""
    configure_peer(PeerSpec("python"))
    DifferentialMachine.stats.reset()
    stats = run_machine(DifferentialMachine, max_examples=8)
    assert stats.steps > 0 and stats.executed_share >= 0.9


@pytest.mark.skipif(
    current_peer() is None, reason="no peer: set MEMCONFORM_PI_CORE=<memory-core.mjs> to run reference vs pi"
)
def test_differential_machine_against_pi(export_dir: Path, peer_pool: None) -> None:
    DifferentialMachine.stats.reset()
    run_machine(DifferentialMachine)


# --- regression export ----------------------------------------------------------------------

SUMMARY_CAP_BUG = "import memconform.reference.store as s\ns.MAX_SUMMARY_LENGTH = 400\n"


def test_failing_example_is_exported_and_replays(
    tmp_path: Path, export_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that cuts summaries at 400 units makes the store machine fail; the exported
    scenario then fails on that store and passes on the reference (through the drivers)."""
    with monkeypatch.context() as broken:
        broken.setattr("memconform.reference.store.MAX_SUMMARY_LENGTH", 400)
        with pytest.raises(Exception) as info:
            run_machine(StoreShadowMachine, seed_value=20260807, max_examples=300)
    assert "seed 20260807" in "\n".join(getattr(info.value, "__notes__", []))
    files = sorted(export_dir.glob("store_model-*.json"))
    assert files, "no regression scenario was written"
    scenario = load_file(files[-1])
    assert scenario.data["regression"]["seed"] == 20260807
    assert cli.main(["replay", str(files[-1]), "--impl", "python"]) == 0

    site = tmp_path / "broken-site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SUMMARY_CAP_BUG)
    monkeypatch.setenv("PYTHONPATH", str(site))
    assert cli.main(["replay", str(files[-1]), "--impl", "python"]) == 1


def test_fuzz_command_reports_and_exports_nothing_when_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "regs"
    code = cli.main(["fuzz", "--impl", "python", "--minutes", "0.001", "--machine", "lock_holders",
                     "--export", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "lock_holders" in text and "steps/s" in text
    assert not out.exists()


# --- reference weaknesses found by the rollback machine ---------------------------------


class _FailOnce(Fs):
    """Fails the first call of one kind on a path matching ``needle`` with EIO."""

    def __init__(self, syscall: str, needle: str) -> None:
        self.syscall, self.needle, self.fd = syscall, needle, -1
        self.armed = True

    def _maybe(self, syscall: str, path: str | None) -> None:
        if self.armed and syscall == self.syscall and path is not None and self.needle in path:
            self.armed = False
            raise NodeError(errno.EIO, syscall, path)

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        self._maybe("open", path)
        fd = super().open(path, flags, mode)
        if flags & os.O_CREAT and path.endswith("/.lock"):
            self.fd = fd
        return fd

    def close(self, fd: int) -> None:
        super().close(fd)
        if fd == self.fd:
            self.fd = -1
            self._maybe("close", "/.lock")

    def unlink(self, path: str) -> None:
        self._maybe("unlink", path)
        super().unlink(path)

    def rename(self, src: str, dst: str) -> None:
        self._maybe("rename", src)
        super().rename(src, dst)


def _store(env: StoreEnv, fs: Fs) -> Store:
    return Store(env.sandbox.env(), fs=fs, clock=env.clock, diagnostics=env.diagnostics.append)


def test_failed_close_of_a_fresh_lock_leaves_no_lock(env: StoreEnv) -> None:
    store = _store(env, _FailOnce("close", "/.lock"))
    with pytest.raises(NodeError):
        store.execute_write_memory("A", "x", "s")
    assert not os.path.lexists(Path(env.local) / ".lock")


def test_s_write_13_rollback_of_a_first_write_leaves_the_initial_index(env: StoreEnv) -> None:
    """S-WRITE-5/13: with no index RAW is the initial text, and the rollback writes RAW back.

    Found by the rollback machine (seed 2788905945): a shared write whose tombstone update
    fails after the index was published leaves ``# Memory Index`` behind, not no index.
    """
    env.put("agent/memory.jsonc", '{"shared_dir": true}')
    env.put("home/.agents/memory/.ocl-removed", "alpha.md\n")
    store = _store(env, _FailOnce("open", ".ocl-removed.tmp-"))
    with pytest.raises(NodeError):
        store.execute_write_memory("Alpha", "x", "s")
    shared = Path(env.shared)
    assert (shared / "MEMORY.md").read_bytes() == b"# Memory Index\n\n"
    assert not (shared / "alpha.md").exists()
    assert (shared / ".ocl-removed").read_bytes() == b"alpha.md\n"


@pytest.mark.xfail(strict=True, reason=(
    "SPEC weakness (reference = SPEC = JS): S-IO-4 step 6 raises after the index's rename, "
    "before S-WRITE-13 notes 'index written', so the rollback removes the topic but keeps the "
    "new index entry"
))
def test_failed_write_never_leaves_an_entry_for_a_rolled_back_topic(env: StoreEnv) -> None:
    store = _store(env, _FailOnce("unlink", "MEMORY.md.tmp-"))
    with pytest.raises(NodeError):
        store.execute_write_memory("A", "x", "s")
    assert not os.path.exists(Path(env.local) / "a.md")
    assert not check_store(env.local, ("regular",))


@pytest.mark.xfail(strict=True, reason=(
    "SPEC weakness (reference = SPEC = JS): S-WRITE-13 writes PREV back as decoded text, so a "
    "rolled-back topic that was not valid UTF-8 comes back with U+FFFD instead of its bytes"
))
def test_rollback_restores_a_non_utf8_topic_byte_for_byte(env: StoreEnv) -> None:
    old = b"---\nname: \"A\"\n---\n\xff body\n"
    env.put("agent/memory/a.md", old)
    store = _store(env, _FailOnce("rename", "MEMORY.md.tmp-"))
    with pytest.raises(NodeError):
        store.execute_write_memory("A", "x", "s", mode="replace")
    assert (Path(env.local) / "a.md").read_bytes() == old


# --- found by the differential machine (reference vs openpi 0.3.9) -----------------------

FINAL_SIGMA = {
    "id": "regressions/fmt17-final-sigma-before-new-cased-letter",
    "clauses": ["S-FMT-2", "S-FMT-17", "S-WRITE-6"],
    "description": (
        "U+1C89 (Unicode 16) is a cased letter, so the sigma of 'İΣᲉ' is not final: JS lowercases "
        "it to σ and 'i̇ςᲉ' does not match that entry (a new topic i-2.md).  The reference maps "
        "U+1C89 through its gap table but decides Final_Sigma with Unicode 14 data, gets ς, and "
        "updates i.md.  Found by the differential machine (seed 355023188), hand-minimised."
    ),
    "tags": ["regression", "machine:differential", "unicode"],
    "clock": {"now": "2026-08-07T01:02:50Z", "tz": "UTC", "mode": "frozen"},
    "given": {"files": {"agent/memory.jsonc": '{"shared_dir": false}'}},
    "steps": [
        {"op": "write_memory", "args": {"topic": "\u0130\u03a3\u1c89", "content": "one", "summary": "s"},
         "expect": {"result": 'Created memory topic "\u0130\u03a3\u1c89" (i.md).'}},
        {"op": "write_memory", "args": {"topic": "i\u0307\u03c2\u1c89", "content": "two", "summary": "s"},
         "expect": {"result": 'Created memory topic "i\u0307\u03c2\u1c89" (i-2.md).'}},
    ],
    "then": {
        "present": ["agent/memory/i.md", "agent/memory/i-2.md"], "invariants": "all",
        "ignore": [{"path": "agent/memory/*", "reason": "the results pin which topic each write chose"}],
    },
    "regression": {"defect": "Final_Sigma decided with Unicode 14 casing", "found_in": "memconform-reference",
                   "seed": 355023188, "model": "differential (reference vs openpi 0.3.9)"},
}


def test_final_sigma_before_a_newer_cased_letter_is_not_final() -> None:
    from memconform.reference.text import js_lower

    assert js_lower("\u0391\u03a3\u1c89") == "\u03b1\u03c3\u1c8a"


def _replay(tmp_path: Path, impl: str) -> int:
    path = tmp_path / "fmt17-final-sigma-before-new-cased-letter.json"
    path.write_text(json.dumps(FINAL_SIGMA), encoding="utf-8")
    load_file(path)
    return cli.main(["replay", str(path), "--impl", impl])


def test_final_sigma_regression_replays_on_the_reference(tmp_path: Path) -> None:
    assert _replay(tmp_path, "python") == 0


@pytest.mark.skipif(current_peer() is None, reason="no peer: set MEMCONFORM_PI_CORE=<memory-core.mjs>")
def test_final_sigma_regression_passes_on_pi(tmp_path: Path) -> None:
    peer = current_peer()
    assert peer is not None
    assert _replay(tmp_path, peer.name) == 0
