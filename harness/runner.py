"""Run scenarios against an implementation through its driver, and compare two implementations.

One ``Worker`` owns a sandbox and a persistent driver: between scenarios it wipes the sandbox
and sends ``reset`` (a fresh-process equivalent), so the per-scenario cost is the operations
themselves.  Scenarios that change the environment get a driver of their own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reference.clock import parse_instant
from reference.config import strip_jsonc

from .faults.inject import scenario_fault, scenario_wrapper, strace_unavailable
from .oracles.invariants import CHECKS, DEFAULT_CHECKS, check_sandbox
from .peers import Answer, Driver, DriverError, PeerSpec, start_driver
from .sandbox import Sandbox, snapshot
from .scenarios import Scenario, content_bytes, substitute

FILE_ACTIONS = {"put_file", "delete_file", "mkfifo", "mkdir", "symlink", "plant_lock", "advance_clock", "chmod"}
VOLATILE = re.compile(r"(\.tmp-\d+-[0-9a-z-]+$)")


@dataclass
class Failure:
    """One mismatch: where, what was expected, what came, and the first difference."""

    where: str
    expected: str
    actual: str
    detail: str = ""

    def render(self) -> str:
        text = f"  {self.where}: {self.detail or 'differs'}"
        text += f"\n    expected: {self.expected}\n    actual:   {self.actual}"
        return text


@dataclass
class Outcome:
    scenario: Scenario
    impl: str
    status: str  # pass | fail | error | xfail | xpass | skip
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    stderr: str = ""
    reason: str = ""
    answers: list[Answer | None] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    op_seconds: float = 0.0  # time inside the scenario's own operations (the rest is overhead)


def first_difference(expected: bytes, actual: bytes) -> str:
    """The first differing line (1-based) and byte offset, with both sides."""
    limit = min(len(expected), len(actual))
    offset = next((i for i in range(limit) if expected[i] != actual[i]), limit)
    line_no = expected.count(b"\n", 0, offset) + 1
    exp_line = expected.split(b"\n")[line_no - 1] if line_no <= expected.count(b"\n") + 1 else b""
    act_lines = actual.split(b"\n")
    act_line = act_lines[line_no - 1] if line_no <= len(act_lines) else b"<end of file>"
    return (
        f"first difference at byte {offset}, line {line_no}: "
        f"expected {exp_line!r} / actual {act_line!r}"
    )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 400 else text[:400] + "…"


def dead_pid() -> int:
    """A pid that belonged to a process that has exited and been reaped (C-5)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


class Worker:
    """A sandbox and a driver for one implementation; runs scenarios one after another."""

    def __init__(
        self,
        spec: PeerSpec,
        *,
        timeout: float = 10.0,
        validate: bool = False,
        strict: bool = False,
        tmp_parent: str | None = None,
    ) -> None:
        self.spec, self.timeout, self.validate, self.strict = spec, timeout, validate, strict
        self.sandbox = Sandbox.create(tmp_parent)
        self.driver: Driver | None = None
        self.impl = ""
        self.version = ""
        self.clock_ms = 0
        self.clock_mode = "frozen"
        self.clock_started = 0.0

    # --- driver lifecycle --------------------------------------------------------------

    def _names(self, driver: Driver | None) -> dict[str, str]:
        sb = self.sandbox
        names = {
            "AGENT": str(sb.agent_dir),
            "HOME": str(sb.home),
            "LOCAL": str(sb.local_dir),
            "SHARED": str(sb.shared_dir),
            "ROOT": str(sb.root),
        }
        if driver is not None:
            names["PID"] = str(driver.pid)
        return names

    def _start(self, env_overrides: dict[str, str] | None = None, wrapper: list[str] | None = None) -> Driver:
        env = self.sandbox.env()
        cwd = str(self.sandbox.root)
        if env_overrides:
            env.update(substitute(env_overrides, self._names(None)))
        driver = start_driver(
            self.spec, env, cwd=cwd, timeout=self.timeout, validate=self.validate, wrapper=wrapper
        )
        self.impl = str(driver.hello.get("impl", self.spec.kind))
        self.version = str(driver.hello.get("version", ""))
        return driver

    def _driver_for(self, sc: Scenario) -> tuple[Driver, bool]:
        """The persistent driver (reset), or a fresh one for scenarios that need it."""
        fault = scenario_fault(sc.data)  # a regression's syscall fault: a fresh driver under strace
        if fault is not None:
            return self._start(sc.data.get("env"), scenario_wrapper(fault, str(self.sandbox.root))), True
        if sc.needs_fresh_process:
            return self._start(sc.data.get("env")), True
        if self.driver is not None and self.driver.proc is not None and self.driver.proc.poll() is None:
            if "reset" in self.driver.ops:
                self.driver.call("reset")
                return self.driver, False
            self.driver.close()
        self.driver = self._start()
        return self.driver, False

    def close(self) -> None:
        if self.driver is not None:
            self.driver.close()
            self.driver = None
        self.sandbox.remove()

    # --- sandbox ----------------------------------------------------------------------------

    def _wipe(self) -> None:
        for sub in ("agent", "home"):
            p = self.sandbox.root / sub
            if p.exists() or p.is_symlink():
                _make_writable(p)
                shutil.rmtree(p, ignore_errors=True)
            p.mkdir()
        for extra in self.sandbox.root.iterdir():
            if extra.name not in ("agent", "home"):
                if extra.is_dir() and not extra.is_symlink():
                    shutil.rmtree(extra, ignore_errors=True)
                else:
                    extra.unlink()

    def _given(self, sc: Scenario, names: dict[str, str]) -> None:
        given = sc.data.get("given", {})
        for d in given.get("dirs", []):
            (self.sandbox.root / d).mkdir(parents=True, exist_ok=True)
        for rel, content in given.get("files", {}).items():
            self.sandbox.put(rel, content_bytes(substitute(content, names)))
        for rel in given.get("fifos", []):
            p = self.sandbox.root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(p)
        for rel, target in given.get("symlinks", {}).items():
            p = self.sandbox.root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(substitute(target, names), p)

    # --- clock ---------------------------------------------------------------------------

    def now_ms(self) -> int:
        if self.clock_mode == "offset":
            return self.clock_ms + int((time.monotonic() - self.clock_started) * 1000)
        return self.clock_ms

    def _set_clock(self, driver: Driver, now_ms: int, tz: str, mode: str) -> None:
        self.clock_ms, self.clock_mode, self.clock_started = now_ms, mode, time.monotonic()
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now_ms // 1000))
        iso += f".{now_ms % 1000:03d}Z"
        answer = driver.call("set_clock", {"now": iso, "mode": mode, "tz": tz})
        if not answer.ok:
            raise DriverError(f"set_clock refused: {answer.error}")

    # --- file actions ---------------------------------------------------------------------

    def _file_action(self, driver: Driver, step: dict[str, Any], names: dict[str, str], tz: str) -> None:
        op, args = step["op"], substitute(step.get("args", {}), names)
        root = self.sandbox.root
        if op == "advance_clock":
            self._set_clock(driver, self.now_ms() + round(float(args["seconds"]) * 1000), tz, self.clock_mode)
            return
        p = root / args["path"] if "path" in args else root / args["dir"] / ".lock"
        if op == "put_file":
            self.sandbox.put(args["path"], content_bytes(args["content"]))
            if "mode" in args:
                os.chmod(p, int(args["mode"], 8))
            if "age_seconds" in args:
                t = self.now_ms() / 1000 - float(args["age_seconds"])
                os.utime(p, (t, t), follow_symlinks=False)
        elif op == "delete_file":
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()
        elif op == "mkfifo":
            p.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(p)
        elif op == "mkdir":
            p.mkdir(parents=True, exist_ok=True)
        elif op == "chmod":
            os.chmod(p, int(args["mode"], 8))
        elif op == "symlink":
            p.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(args["target"], p)
        elif op == "plant_lock":
            p.parent.mkdir(parents=True, exist_ok=True)
            age = float(args.get("age_seconds", 0))
            pid = args.get("pid", "dead")
            if "content" not in args:  # spawning the dead pid takes time: stamp afterwards
                pid = driver.pid if pid == "self" else dead_pid() if pid == "dead" else pid
            created = self.now_ms() - int(age * 1000)
            content = args.get("content", f"{pid}\t{created}\tplanted")
            p.write_bytes(content.encode("utf-8"))
            os.utime(p, (created / 1000, created / 1000))

    # --- running --------------------------------------------------------------------------

    def run(self, sc: Scenario) -> Outcome:
        started = time.monotonic()
        outcome = Outcome(sc, self.spec.name, "pass")
        fresh: Driver | None = None
        try:
            if scenario_fault(sc.data) is not None and (why := strace_unavailable()):
                outcome.status, outcome.reason = "skip", why
                return outcome
            self._wipe()
            names = self._names(None)
            self._given(sc, names)
            before = snapshot(self.sandbox.root)
            driver, is_fresh = self._driver_for(sc)
            fresh = driver if is_fresh else None
            missing = sorted(
                {s["op"] for s in sc.steps if s["op"] not in FILE_ACTIONS} - driver.ops
            )
            if missing:
                outcome.status, outcome.reason = "skip", f"driver lacks op(s) {', '.join(missing)}"
                return outcome
            names = self._names(driver)
            clock = sc.clock
            self._set_clock(driver, parse_instant(clock["now"]), clock["tz"], clock["mode"])
            driver.take_stderr()
            for i, step in enumerate(sc.steps):
                if step["op"] in FILE_ACTIONS:
                    self._file_action(driver, step, names, clock["tz"])
                    outcome.answers.append(None)
                    continue
                t0 = time.monotonic()
                answer = driver.call(
                    step["op"], substitute(step.get("args", {}), names), timeout=step.get("timeout")
                )
                elapsed = time.monotonic() - t0
                outcome.op_seconds += elapsed
                outcome.answers.append(answer)
                expect = substitute(step.get("expect", {}), names)
                outcome.failures += check_answer(i, step, answer, expect, elapsed, driver, self.strict)
            after = snapshot(self.sandbox.root)
            outcome.files = after
            outcome.failures += check_then(sc, names, before, after, self.sandbox.root)
        except DriverError as e:
            outcome.status = "error"
            outcome.reason = str(e)
            outcome.stderr = e.stderr
            if self.driver is not None and (self.driver.proc is None or self.driver.proc.poll() is not None):
                self.driver = None
        except Exception as e:  # a harness bug must not end the run: report it on this scenario
            outcome.status = "error"
            outcome.reason = f"harness error: {type(e).__name__}: {e}"
        finally:
            if fresh is not None:
                fresh.close()
            outcome.seconds = time.monotonic() - started
        if outcome.status == "skip":
            return outcome
        if self.driver is not None:
            outcome.stderr += self.driver.take_stderr()
        if outcome.status == "pass" and outcome.failures:
            outcome.status = "fail"
        outcome.seconds = time.monotonic() - started
        return outcome


def _make_writable(path: Path) -> None:
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            p = Path(dirpath) / d
            if not p.is_symlink():
                os.chmod(p, 0o755)


def _wait_stderr(driver: Driver, needles: list[str], seconds: float = 2.0) -> str:
    """Stderr arrives on its own pipe; wait (bounded) for the lines we expect."""
    deadline = time.monotonic() + seconds
    text = driver.stderr()
    while not all(n in text for n in needles) and time.monotonic() < deadline:
        threading.Event().wait(0.01)
        text = driver.stderr()
    return text


def _contains(value: Any, needle: str) -> bool:
    """A needle in a string result, or in any string inside a structured one."""
    if isinstance(value, str):
        return needle in value
    if isinstance(value, dict):
        return any(_contains(v, needle) for v in value.values())
    if isinstance(value, list):
        return any(_contains(v, needle) for v in value)
    return False


def check_answer(
    i: int,
    step: dict[str, Any],
    answer: Answer,
    expect: dict[str, Any],
    elapsed: float,
    driver: Driver,
    strict: bool,
) -> list[Failure]:
    where = f"step {i + 1} ({step['op']})"
    out: list[Failure] = []
    if "error" in expect:
        want = expect["error"]
        if answer.ok:
            return [Failure(where, f"error {want}", f"result {_show(answer.result)}", "expected an error")]
        got = answer.error or {}
        if "kind" in want and got.get("kind") != want["kind"]:
            out.append(Failure(where + " error kind", want["kind"], str(got.get("kind"))))
        if "code" in want and got.get("code") != want["code"]:
            out.append(Failure(where + " error code", str(want["code"]), str(got.get("code"))))
        if strict and "message" in want and got.get("message") != want["message"]:
            out.append(Failure(where + " error message", want["message"], str(got.get("message"))))
        if "message_matches" in want and not re.search(want["message_matches"], str(got.get("message", ""))):
            out.append(Failure(where + " error message", "/" + want["message_matches"] + "/", str(got.get("message"))))
    elif expect and not answer.ok and any(k.startswith("result") for k in expect):
        out.append(Failure(where, "a result", f"error {answer.error}", "unexpected error"))
        return out
    if answer.ok:
        if "result" in expect and answer.result != expect["result"]:
            detail = ""
            if isinstance(expect["result"], str) and isinstance(answer.result, str):
                detail = first_difference(
                    expect["result"].encode("utf-8", "surrogatepass"),
                    answer.result.encode("utf-8", "surrogatepass"),
                )
            out.append(Failure(where + " result", _show(expect["result"]), _show(answer.result), detail))
        if "result_matches" in expect and not re.fullmatch(expect["result_matches"], str(answer.result), re.S):
            out.append(Failure(where + " result", "/" + expect["result_matches"] + "/", _show(answer.result)))
        for needle in expect.get("result_contains", []):
            if not _contains(answer.result, needle):
                out.append(Failure(where + " result", f"contains {needle!r}", _show(answer.result)))
        for needle in expect.get("result_excludes", []):
            if _contains(answer.result, needle):
                out.append(Failure(where + " result", f"excludes {needle!r}", _show(answer.result)))
    if "max_seconds" in expect and elapsed > expect["max_seconds"]:
        out.append(Failure(where + " time", f"<= {expect['max_seconds']} s", f"{elapsed:.3f} s"))
    if "min_seconds" in expect and elapsed < expect["min_seconds"]:
        out.append(Failure(where + " time", f">= {expect['min_seconds']} s", f"{elapsed:.3f} s"))
    needles = expect.get("stderr_contains", [])
    if needles:
        text = _wait_stderr(driver, needles)
        for needle in needles:
            if needle not in text:
                out.append(Failure(where + " stderr", f"contains {needle!r}", _show(text)))
    return out


def check_then(
    sc: Scenario, names: dict[str, str], before: dict[str, bytes], after: dict[str, bytes], root: Path
) -> list[Failure]:
    then = substitute(sc.data.get("then", {}), names)
    out: list[Failure] = []
    for rel, content in then.get("files", {}).items():
        want = content_bytes(content)
        got = after.get(rel)
        if got is None:
            out.append(Failure(f"file {rel}", _show(want), "<absent>", "missing"))
        elif got != want:
            out.append(Failure(f"file {rel}", _show(want), _show(got), first_difference(want, got)))
    for rel, pattern in then.get("matches", {}).items():
        got = after.get(rel)
        text = got.decode("utf-8", "replace") if got is not None else None
        if text is None or not re.fullmatch(pattern, text, re.S):
            out.append(Failure(f"file {rel}", f"/{pattern}/", _show(text)))
    for rel in then.get("absent", []):
        if rel in after:
            out.append(Failure(f"file {rel}", "<absent>", _show(after[rel]), "must not exist"))
    for rel in then.get("present", []):
        if rel not in after:
            out.append(Failure(f"file {rel}", "<present>", "<absent>", "must exist"))
    for rel in then.get("unchanged", []):
        if rel == "*":
            if before != after:
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                out.append(Failure("sandbox", "unchanged", ", ".join(changed[:10]), "files changed"))
        elif before.get(rel) != after.get(rel):
            out.append(Failure(f"file {rel}", _show(before.get(rel)), _show(after.get(rel)), "changed"))
    for rel, mode in then.get("modes", {}).items():
        try:
            got_mode = stat.S_IMODE(os.lstat(root / rel).st_mode)
        except OSError:
            out.append(Failure(f"mode {rel}", mode, "<absent>"))
            continue
        if got_mode != int(mode, 8):
            out.append(Failure(f"mode {rel}", mode, f"0{got_mode:03o}"))
    for d in then.get("no_other_files", []):
        listed = set(then.get("files", {})) | set(then.get("present", []))
        prefix = d.rstrip("/") + "/"
        extra = sorted(
            k for k in after if k.startswith(prefix) and "/" not in k[len(prefix):] and k not in listed
        )
        if extra:
            out.append(Failure(f"directory {d}", "only the listed files", ", ".join(extra)))
    inv = then.get("invariants")
    if inv:
        names_ = DEFAULT_CHECKS if inv == "all" else tuple(n for n in inv if n in CHECKS)
        for v in check_sandbox(root, names_):
            out.append(Failure(f"invariant {v.clause}", "holds", str(v)))
    return out


# --- many scenarios, in parallel ------------------------------------------------------------


def run_all(
    spec: PeerSpec,
    scenarios: list[Scenario],
    *,
    parallel: int = 1,
    timeout: float = 10.0,
    validate: bool = False,
    strict: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run every scenario; one persistent driver per worker thread."""
    lock = threading.Lock()
    pending = list(reversed(scenarios))
    results: dict[str, Outcome] = {}

    def work() -> None:
        worker = Worker(spec, timeout=timeout, validate=validate, strict=strict)
        try:
            while True:
                with lock:
                    if not pending:
                        return
                    sc = pending.pop()
                outcome = worker.run(sc)
                with lock:
                    results[sc.id] = outcome
                    if on_outcome is not None:
                        on_outcome(outcome)
        finally:
            worker.close()

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for f in [pool.submit(work) for _ in range(max(1, parallel))]:
            f.result()
    return [results[sc.id] for sc in scenarios]


# --- differential mode --------------------------------------------------------------------


def _config_values(data: bytes) -> bytes:
    """``memory.jsonc`` compares by parsed values and key order; comment wording is free (S-CFG-3)."""
    try:
        value = json.loads(strip_jsonc(data.decode("utf-8")))
    except ValueError:
        return data
    return json.dumps(value, ensure_ascii=False).encode()


def normalise_files(files: dict[str, bytes], names: dict[str, str]) -> dict[str, bytes]:
    """Make two sandboxes comparable: placeholders for roots, volatile lock/temp names."""
    out = {}
    for rel, data in files.items():
        rel2 = VOLATILE.sub(".tmp-*", rel)
        if rel2.endswith("/.lock") or rel2 == ".lock":
            data = b"<lock>"
        elif rel2.endswith("memory.jsonc"):
            data = _config_values(data)
        for key, value in names.items():
            if key != "PID" and value:
                data = data.replace(value.encode(), b"${" + key.encode() + b"}")
        out[rel2] = data
    return out


def _normalise_answer(answer: Answer | None, names: dict[str, str]) -> Any:
    if answer is None:
        return None
    value: Any = {"ok": answer.ok, "result": answer.result}
    if not answer.ok:
        err = answer.error or {}
        value = {"ok": False, "kind": err.get("kind"), "code": err.get("code")}
    text = repr(value)
    for key, v in names.items():
        if key != "PID" and v:
            text = text.replace(v, "${" + key + "}")
    return text


def diff_outcomes(a: Outcome, b: Outcome, names_a: dict[str, str], names_b: dict[str, str]) -> list[Failure]:
    out: list[Failure] = []
    for i, (x, y) in enumerate(zip(a.answers, b.answers, strict=False)):
        nx, ny = _normalise_answer(x, names_a), _normalise_answer(y, names_b)
        if nx != ny:
            out.append(Failure(f"step {i + 1} ({a.scenario.steps[i]['op']})", str(nx), str(ny), "results differ"))
    fa, fb = normalise_files(a.files, names_a), normalise_files(b.files, names_b)
    for rel in sorted(set(fa) | set(fb)):
        da, db = fa.get(rel), fb.get(rel)
        if da != db:
            detail = first_difference(da, db) if da is not None and db is not None else "only on one side"
            out.append(Failure(f"file {rel}", _show(da), _show(db), detail))
    return out


def run_differential(
    a: PeerSpec, b: PeerSpec, scenarios: Iterable[Scenario], *, timeout: float = 10.0,
    on_result: Callable[[Scenario, list[Failure]], None] | None = None,
) -> list[tuple[Scenario, list[Failure]]]:
    wa, wb = Worker(a, timeout=timeout), Worker(b, timeout=timeout)
    results: list[tuple[Scenario, list[Failure]]] = []
    try:
        for sc in scenarios:
            oa, ob = wa.run(sc), wb.run(sc)
            if "skip" in (oa.status, ob.status):
                results.append((sc, []))  # one side cannot run it: nothing to compare
                if on_result is not None:
                    on_result(sc, [])
                continue
            diffs = diff_outcomes(oa, ob, wa._names(None), wb._names(None))
            for o, label in ((oa, a.name), (ob, b.name)):
                if o.status == "error":
                    diffs.append(Failure(f"driver {label}", "runs", o.reason))
            results.append((sc, diffs))
            if on_result is not None:
                on_result(sc, diffs)
    finally:
        wa.close()
        wb.close()
    return results

