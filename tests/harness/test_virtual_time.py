"""Virtual time (issue 15 item 1): sleeps and timers move the clock instead of waiting, answers
say where the clock is, and lock files agree with it."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from memconform.harness.drivers.peers import PeerSpec, start_driver
from memconform.harness.drivers.sandbox import Sandbox
from memconform.harness.gate.scenarios import instant_ms, iso_instant
from memconform.reference.clock import ControlledClock, stamp_own_locks
from memconform.reference.fs import CREATE_EXCLUSIVE, Fs

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
START = instant_ms("2026-08-07T01:02:50Z")


def test_virtual_sleep_moves_wall_and_monotonic_time_without_waiting() -> None:
    clock = ControlledClock(START, "virtual")
    t0 = time.monotonic()
    clock.sleep_ms(20)
    clock.sleep_ms(1000)
    assert time.monotonic() - t0 < 0.5
    assert clock.now_ms() == START + 1020
    assert clock.monotonic_ms() == 1020


def test_offset_and_frozen_sleep_for_real() -> None:
    frozen = ControlledClock(START, "frozen")
    t0 = time.monotonic()
    frozen.sleep_ms(30)
    assert time.monotonic() - t0 >= 0.025
    assert frozen.now_ms() == START


def test_locks_the_process_creates_get_the_clock_s_mtime(tmp_path: Path) -> None:
    fs = Fs()
    stamp_own_locks(fs, lambda: START)
    lock, other = str(tmp_path / ".lock"), str(tmp_path / "a.md")
    for path in (lock, other):
        fd = fs.open(path, CREATE_EXCLUSIVE, 0o666)
        fs.write(fd, b"1\t2\tx")
        fs.close(fd)
    assert os.lstat(lock).st_mtime_ns == START * 1_000_000
    assert abs(os.lstat(other).st_mtime - time.time()) < 60  # other files keep the kernel's time


def _plant(sandbox: Sandbox, rel: str, now_ms: int, age_s: float, pid: int = 4194305) -> None:
    path = sandbox.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f"{pid}\t1\tplanted".encode())
    ns = (now_ms - round(age_s * 1000)) * 1_000_000
    os.utime(path, ns=(ns, ns))


def _write_against_lock(spec: PeerSpec, shared: bool = False) -> tuple[int | None, float, object]:
    """Local: a lock 9.7 s old (dead owner) is reclaimable once 10 s old, the write polls 20 ms at
    a time.  Shared: the driver's own lock, alive throughout: 2 s of polls, 1 s pause, busy."""
    sandbox = Sandbox.create()
    try:
        sandbox.put("agent/memory.jsonc", b'{"shared_dir": true}' if shared else b"{}")
        if shared:
            sandbox.put("agent/memory/.shared-dir-migrated", b"")
        with start_driver(spec, sandbox.env(), cwd=str(sandbox.root)) as driver:
            assert "virtual" in driver.clock_modes
            answer = driver.call("set_clock", {"now": iso_instant(START), "mode": "virtual", "tz": "UTC"})
            assert answer.ok and answer.clock_ms == START
            if shared:
                _plant(sandbox, "home/.agents/memory/.lock", START, 0, driver.pid)
            else:
                _plant(sandbox, "agent/memory/.lock", START, 9.7)
            t0 = time.monotonic()
            answer = driver.call("write_memory", {"topic": "B", "content": "x", "summary": "s"})
            wall = time.monotonic() - t0
            assert answer.ok, answer.error
            moved = None if answer.clock_ms is None else answer.clock_ms - START
            return moved, wall, answer.result
    finally:
        sandbox.remove()


BUSY = "Error: memory store is busy (another tool or process holds the lock) — please retry in a moment."


@pytest.mark.parametrize("spec", [
    PeerSpec("python"),
    pytest.param("pi", marks=pytest.mark.skipif(not os.environ.get("MEMCONFORM_PI_CORE"),
                                               reason="set MEMCONFORM_PI_CORE to run against openpi")),
])
def test_lock_waits_are_exact_in_virtual_time(spec: PeerSpec | str) -> None:
    peer = PeerSpec.parse(spec) if isinstance(spec, str) else spec
    moved, _, result = _write_against_lock(peer)
    assert result == 'Created memory topic "B" (b.md).'
    assert moved == 320  # the first attempt with age > 10 000 ms: after 16 polls of 20 ms
    moved, wall, result = _write_against_lock(peer, shared=True)
    assert result == BUSY
    assert moved == 3000  # S-LOCK-7: a 2 000 ms window, a 1 000 ms pause, one last attempt
    assert wall < 2.5  # the 3 s are clock, not waiting


FAKE_CORE = r"""
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
const dir = process.env.PI_CODING_AGENT_DIR;
export async function executeWriteMemory() {
  const start = Date.now();
  const p0 = performance.now();
  do { await new Promise(r => setTimeout(r, 20)); } while (Date.now() < start + 500);
  await sleep(1000);
  let ticks = 0;
  await new Promise(r => { const h = setInterval(() => { if (++ticks === 3) { clearInterval(h); r(); } }, 100); });
  await new Promise(r => setImmediate(r));
  return `${Date.now() - start} ${Math.round(performance.now() - p0)}`;
}
export async function executePinMemory() {
  fs.mkdirSync(dir, { recursive: true });
  const lock = path.join(dir, '.lock');
  fs.writeFileSync(lock, 'token', { flag: 'wx' });
  const a = fs.lstatSync(lock).mtimeMs;
  fs.unlinkSync(lock);
  const fd = fs.openSync(lock, 'wx');
  fs.writeFileSync(fd, 'token');
  fs.closeSync(fd);
  const b = fs.lstatSync(lock).mtimeMs;
  fs.unlinkSync(lock);
  return [Math.floor(a) - Date.now(), Math.floor(b) - Date.now()];
}
export async function executeRemoveMemory() { return 'removed'; }
"""


@needs_node
def test_js_timers_move_the_virtual_clock_and_lock_mtimes_follow_it(tmp_path: Path) -> None:
    core = tmp_path / "memory-core.mjs"
    core.write_text(FAKE_CORE)
    sandbox = Sandbox.create()
    try:
        with start_driver(PeerSpec("pi", str(core)), sandbox.env(), cwd=str(sandbox.root)) as driver:
            assert "virtual" in driver.clock_modes
            assert driver.call("set_clock", {"now": iso_instant(START), "mode": "virtual"}).ok
            t0 = time.monotonic()
            answer = driver.call("write_memory", {})
            wall = time.monotonic() - t0
            assert answer.ok, answer.error
            # 25 polls of 20 ms, a 1 s sleep, three 100 ms interval ticks: 1.8 s of clock
            assert answer.result == "1800 1800"
            assert answer.clock_ms == START + 1800
            assert wall < 1.0
            pinned = driver.call("pin_memory", {})
            assert pinned.ok and pinned.result == [0, 0]  # writeFileSync(wx) and openSync(wx)…closeSync
            assert driver.call("set_clock", {"now": iso_instant(START), "mode": "offset"}).ok
            assert driver.call("remove_memory", {}).clock_ms is None  # only virtual answers carry it
    finally:
        sandbox.remove()


def test_bench_w5_row_shows_both_clocks_and_the_ops_share() -> None:
    from memconform.harness.bench.corpus import render

    row = {"impl": "python", "profile": "openpi", "scenarios": 662, "workers": 2, "virtual_s": 4.0,
           "real_s": 20.0, "virtual_ops_share": 0.25, "real_ops_share": 0.05, "same_verdicts": True,
           "slowest_virtual": ["a 0.50 s"], "load": 1.0}
    table = render([row, {**row, "impl": "pi", "same_verdicts": False}])
    assert "| python | openpi | 662 | 2 | 4.00 | 20.00 | 5.0× | 25% | 5% | yes | 1.0/1.0 |" in table
    assert any(line.startswith("| pi |") and "| NO |" in line for line in table)
    differing = render([{**row, "same_verdicts": False, "differ": ["lock/x: virtual pass, real fail"]}])
    assert any("verdicts that differ: lock/x: virtual pass, real fail" in line for line in differing)


def test_a_real_time_scenario_runs_on_the_real_clock_in_the_serial_tail() -> None:
    import json

    from memconform.harness.gate.runner import run_all
    from memconform.harness.gate.scenarios import SCENARIOS_DIR, Scenario

    path = SCENARIOS_DIR / "conformance" / "lock" / "busy-remove.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["clock"]["mode"] == "offset"  # a 500 ms lock window
    virtual = Scenario.from_data(data, path)
    real = Scenario.from_data({**data, "id": "lock/busy-remove-real", "real_time": True}, path)
    assert real.real_time and not virtual.real_time
    order: list[str] = []
    outcomes = run_all(PeerSpec("python"), [real, virtual], parallel=2, on_outcome=lambda o: order.append(o.scenario.id))
    assert [o.status for o in outcomes] == ["pass", "pass"]
    assert order == ["lock/busy-remove", "lock/busy-remove-real"]  # the tail runs after the rest
    assert outcomes[0].op_seconds >= 0.45 > outcomes[1].op_seconds  # waited for real / not at all


@pytest.mark.parametrize("spec", [
    PeerSpec("python"),
    pytest.param("pi", marks=pytest.mark.skipif(not os.environ.get("MEMCONFORM_PI_CORE"),
                                               reason="set MEMCONFORM_PI_CORE to run against openpi")),
])
def test_reset_takes_a_scenario_environment_and_gives_it_back(spec: PeerSpec | str) -> None:
    """An env scenario reuses the warm driver: reset {env} is a fresh process started with it."""
    peer = PeerSpec.parse(spec) if isinstance(spec, str) else spec
    sandbox = Sandbox.create()
    try:
        with start_driver(peer, sandbox.env(), cwd=str(sandbox.root)) as driver:
            assert driver.hello.get("reset_env") is True
            first = driver.call("memory_dir").result
            other = str(sandbox.root / "home" / ".agents")
            assert driver.call("reset", {"env": {"PI_CODING_AGENT_DIR": other}}).ok
            assert driver.call("memory_dir").result == other + "/memory"
            assert driver.call("reset").ok
            assert driver.call("memory_dir").result == first
    finally:
        sandbox.remove()
