"""The shared-store machine (issue 25 item 6): generated write/remove/pin sequences against any
co-writer's driver, judged by the SS- contract.  It binds OpenCode (no byte prediction to
refuse it for), passes the reference and fails a reference whose remove records no tombstone
or whose append drops the old body (driver shims)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import Phase

from memconform.harness import cli
from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.machines import shared_store, targets
from memconform.harness.machines.base import run_machine

from .shims import plant

SEED = 20261203


@pytest.fixture(autouse=True)
def fresh_pool() -> Iterator[None]:
    """Drivers started under this test's environment (a shim), closed after it."""
    targets.Pool.close()
    yield
    targets.Pool.close()
    shared_store.SharedStoreMachine.target_spec = PeerSpec("python")


def test_ss_out_1_binds_every_co_writer_and_refuses_a_driver_without_the_ops() -> None:
    ops = frozenset({"write_memory", "remove_memory", "pin_memory", "hello"})
    assert shared_store.bind(PeerSpec("opencode", "/x/ocl-memory.mjs"), ops) is None
    assert shared_store.SharedStoreMachine.target_spec.kind == "opencode"
    assert shared_store.bind(PeerSpec("python"), frozenset({"write_memory"})) == \
        "the driver lacks the ops pin_memory, remove_memory"


def test_ss_out_1_the_reference_passes(capsys: pytest.CaptureFixture[str]) -> None:
    print(f"seed {SEED}")
    stats = run_machine(shared_store.SharedStoreMachine, seed_value=SEED, max_examples=4, export=False)
    assert stats.steps > 20 and stats.executed_share == 1.0


@pytest.mark.parametrize(("defect", "code", "clause"), [
    ("remove-without-tombstone", "import memconform.reference.store as s\ns.add_tombstone = lambda *a: None\n", "SS-TOMB-1"),
    ("append-drops-old-body", "import memconform.reference.store as s\n_w = s.Store.execute_write_memory\n"
     "s.Store.execute_write_memory = lambda self, topic=None, content=None, summary=None, pin=None, mode=None, "
     "overwrite=None: _w(self, topic, content, summary, pin, 'replace')\n", "SS-FMT-2"),
])
def test_ss_machine_catches_a_broken_co_writer(defect: str, code: str, clause: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    plant(tmp_path, monkeypatch, code)
    print(f"seed {SEED}")
    with pytest.raises(AssertionError) as info:
        run_machine(shared_store.SharedStoreMachine, seed_value=SEED, max_examples=30, export=False,
                    phases=[Phase.generate], stateful_step_count=25)  # no shrinking: the failure is what is asserted
    assert clause in str(info.value), str(info.value)


def test_fuzz_names_the_reference_as_driven_not_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["fuzz", "--impl", "python", "--machine", "shared_store", "--minutes", "0.001", "--no-export"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("shared_store"))
    assert "memconform-reference" in row and "in process" not in row
