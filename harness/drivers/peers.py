"""Peer drivers: start an implementation, speak JSON Lines to it, survive it misbehaving.

A peer is named ``python`` (``python -m memconform.reference serve``), ``pi:<memory-core.mjs>`` or
``opencode:<ocl-memory.mjs>`` (node drivers under ``harness/drivers/node/``), or comes from
``MEMCONFORM_PI_CORE`` / ``MEMCONFORM_OPENCODE_PLUGIN``.  A driver that hangs is killed after
the per-op timeout; junk on stdout, a wrong id or a crash become a ``DriverError`` with the
driver's stderr attached, so a runner can report it and go on.

Who a peer is comes from the peer, never from its driver (issue 12): ``hello`` reports
``impl``/``version`` as the implementation states them.  The node drivers
(``protocol.mjs`` ``identify()``) read the nearest ``package.json`` walking up from the module
whose ``name`` is the driver's package (``openpi-memory`` / ``openclaude-memory``, any npm
``@scope``), else a ``VERSION``/``version`` string the module exports.  A name the
implementation does not confirm is the package name with ``?`` appended (``openpi-memory?``:
driven as that package, never equal to a confirmed name); a version it does not state is
``unknown``.  ``hello`` also gives ``module`` (the path driven) and ``missing`` (exports the
driver would use but the module lacks; their ops are left out of ``ops``).  A module that does
not import or lacks the exports a driver cannot do without answers every op, ``hello`` first,
with an error of kind ``unavailable`` naming the import error or the missing exports;
``preflight`` turns that, and any other failure to start, into one ``PeerUnavailable`` line.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import termios
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..oracles.outcome_kind import KIND_OPS
from .hangwatch import wait_line
from .interrupt import stopping
from .procs import blocked_in
from .sandbox import remove_temp, temp_dir
from .validation import first_error

if TYPE_CHECKING:
    from ..reports.envelope import ImplInfo

# the node drivers (pi_core.mjs, opencode_plugin.mjs, the facade and their shared loop)
PEERS_DIR = Path(__file__).resolve().parent / "node"
SCHEMA_PATH = Path(__file__).resolve().parent / "protocol.schema.json"
DEFAULT_TIMEOUT = 10.0
# Ops that (re)load the implementation's code: not watched for hangs (a start under load
# looks like a spin: runnable, burning CPU, no bytes read or written)
LOADING_OPS = frozenset({"hello", "reset", "fresh_instance"})
_STARTING = threading.BoundedSemaphore(max(2, os.cpu_count() or 1))  # drivers starting at once
ENV_PI = "MEMCONFORM_PI_CORE"
ENV_OPENCODE = "MEMCONFORM_OPENCODE_PLUGIN"


class PeerUnavailable(Exception):
    """The named peer cannot run here (no path given, file missing, no node, refused hello)."""


class DriverError(Exception):
    """The driver broke the protocol: crashed, hung, printed junk or answered the wrong id."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr
        self.hung: str | None = None  # the op the driver stopped answering, on a timeout
        self.blocked: str | None = None  # the syscall and file it was blocked in, when readable
        self.waited = 0.0  # how long it was given
        self.stuck = "hang"  # hang (a kernel wait, or silence) | livelock (spinning), when hung


@dataclass(frozen=True)
class PeerSpec:
    """Which implementation to drive, and how to start its driver."""

    kind: str  # "python" | "pi" | "opencode" | "node" (a raw driver script, for tests)
    path: str | None = None

    @property
    def name(self) -> str:
        return self.kind if self.path is None else f"{self.kind}:{self.path}"

    @classmethod
    def parse(cls, text: str) -> PeerSpec:
        """``python``, ``pi[:path]``, ``opencode[:path]`` or ``node:<driver.mjs>``."""
        kind, _, path = text.partition(":")
        if kind == "python" and not path:
            return cls("python")
        if kind in ("pi", "opencode", "node"):
            var = {"pi": ENV_PI, "opencode": ENV_OPENCODE}.get(kind)
            if not path and var:
                path = os.environ.get(var, "")
            if not path:
                where = f"{kind}:<file>" + (f" or ${var}" if var else "")
                raise PeerUnavailable(f"peer {kind!r} needs a path: {where}")
            return cls(kind, str(Path(path).resolve()))
        raise PeerUnavailable(f"unknown peer {text!r} (python, pi:<path>, opencode:<path>)")

    def command(self) -> list[str]:
        if self.kind == "python":
            return [sys.executable, "-m", "memconform.reference", "serve"]
        assert self.path is not None
        if Path(self.path).is_dir():
            raise PeerUnavailable(f"{self.name}: is a directory, not a module file")
        if not Path(self.path).is_file():
            raise PeerUnavailable(f"{self.name}: no such file")
        node = shutil.which("node")
        if node is None:
            raise PeerUnavailable("node is not installed")
        if self.kind == "node":
            return [node, self.path]
        driver = PEERS_DIR / ("pi_core.mjs" if self.kind == "pi" else "opencode_plugin.mjs")
        return [node, str(driver), self.path]


def configured_peers() -> list[PeerSpec]:
    """The real JS peers named by the environment (none in CI)."""
    out = []
    for kind, var in (("pi", ENV_PI), ("opencode", ENV_OPENCODE)):
        path = os.environ.get(var)
        if path and Path(path).is_file():
            out.append(PeerSpec(kind, str(Path(path).resolve())))
    return out


@dataclass
class Answer:
    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None
    clock_ms: int | None = None  # the driver's clock after the op, when it is virtual
    outcome: dict[str, Any] | None = None  # the outcome kind a driver declaring outcome_kinds gives
    kinds_declared: bool = False  # its hello declared outcome_kinds (oracles.outcome_kind)


@dataclass
class Driver:
    """One running driver process."""

    spec: PeerSpec
    env: dict[str, str]
    cwd: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    validate: bool = False
    wrapper: list[str] = field(default_factory=list)  # command prefix: strace, setpriv …
    proc: subprocess.Popen[bytes] | None = None
    hello: dict[str, Any] = field(default_factory=dict)
    _lines: queue.Queue[bytes | None] = field(default_factory=queue.Queue)
    _stderr: list[bytes] = field(default_factory=list)
    _stderr_pump: threading.Thread | None = None
    # whoever moves bytes from the stderr pipe into ``_stderr`` holds this lock, so a byte is
    # always either in the pipe or stored: never in a starved thread's hands (issue 22 item 5)
    _stderr_lock: threading.Lock = field(default_factory=threading.Lock)
    _stderr_eof: bool = False
    _next_id: int = 0
    _tmp: Path | None = None  # a node driver's TMPDIR, removed with it (``close``)

    def start(self) -> Driver:
        """Start the process and ask ``hello``, at most one start per core at once.

        Sixty-four workers starting their interpreters together on two cores took over ten
        seconds each to answer ``hello`` and failed as hung: a false result made by the
        harness's own load, not the implementation (issue 22 item 5).  Queued starts wait
        here, outside the timeout; the one starting is judged by it."""
        with _STARTING:
            if stopping():
                raise DriverError(f"{self.spec.name}: not started: the run was interrupted")
            return self._start()

    def _start(self) -> Driver:
        env = dict(self.env)
        command = [*self.wrapper, *self.spec.command()]
        # the reference must import from this checkout even when cwd is a sandbox
        root = str(PEERS_DIR.parents[2])
        if self.spec.kind == "python":
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        else:
            # a node driver with the reference behind it (the facade, the examples) starts the
            # python running us, not whichever python3 is first on PATH (a venv not activated)
            if not env.get("MEMCONFORM_PYTHON"):
                env["MEMCONFORM_PYTHON"] = sys.executable
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
            # a node driver's own temporary folders (openclaude's module mirrors) live in one the
            # harness made and removes: a driver killed on Ctrl-C cannot clean up after itself
            self._tmp = temp_dir("memconform-driver-")
            env["TMPDIR"] = str(self._tmp)
        try:
            self.proc = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=self.cwd,
            )
        except OSError:
            if self._tmp is not None:
                remove_temp(self._tmp)
            raise
        assert self.proc.stderr is not None
        os.set_blocking(self.proc.stderr.fileno(), False)  # read only what is there (``_drain_stderr``)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self._stderr_pump = threading.Thread(target=self._pump_stderr, daemon=True)
        self._stderr_pump.start()
        try:
            answer = self.call("hello")
        except DriverError:
            self.kill()
            self.close()
            raise
        if not answer.ok or not isinstance(answer.result, dict):
            # e.g. kind "unavailable": the module does not import or lacks the driver's exports
            self.kill()
            stderr = self.stderr()
            self.close()
            why = answer.error.get("message", answer.error) if answer.error else answer.result
            raise DriverError(f"{self.spec.name}: hello failed: {why}", stderr)
        if self.validate:
            try:
                _validate_hello(answer.result)
            except DriverError:
                self.close()
                raise
        self.hello = answer.result
        return self

    def _pump_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        """Keep the stderr pipe from filling while no one asks: wait until it is readable,
        then move what it holds under the lock (``_drain_stderr``)."""
        assert self.proc is not None and self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        while not self._stderr_eof:
            if poller.poll(500) and not self._drain_stderr():
                return

    def _drain_stderr(self) -> bool:
        """Move every byte now in the stderr pipe into ``_stderr``; False once it is closed.

        Called by the pump and by every reader: the reader holds the lock while it reads, so
        what the driver wrote before its answer is in the text it gets, whatever the pump's
        thread is doing (a driver writes its diagnostics before it answers)."""
        with self._stderr_lock:
            pipe = self.proc.stderr if self.proc is not None else None
            if self._stderr_eof or pipe is None or pipe.closed:
                self._stderr_eof = True
                return False
            while True:
                try:
                    chunk = os.read(pipe.fileno(), 65536)
                except BlockingIOError:
                    return True
                except OSError:
                    chunk = b""
                if not chunk:
                    self._stderr_eof = True
                    return False
                self._stderr.append(chunk)

    def stderr(self) -> str:
        """What the driver wrote on stderr so far: every byte written before this call (all of
        it once the driver has exited: a dead driver's last words are in the pipe)."""
        self._drain_stderr()
        with self._stderr_lock:
            return b"".join(self._stderr).decode("utf-8", "replace")

    def stderr_drained(self) -> bool:
        """Nothing waits unread in the stderr pipe (always true after ``stderr()``: kept for
        callers that poll for late writers)."""
        if self.proc is None or self.proc.stderr is None or self._stderr_eof:
            return True
        try:
            buf = bytearray(4)
            fcntl.ioctl(self.proc.stderr.fileno(), termios.FIONREAD, buf)
        except (OSError, ValueError):
            return True
        return int.from_bytes(buf, sys.byteorder) == 0

    def take_stderr(self) -> str:
        """``stderr()`` and forget it, in one step (nothing arriving between is lost)."""
        self._drain_stderr()
        with self._stderr_lock:
            text = b"".join(self._stderr).decode("utf-8", "replace")
            self._stderr.clear()
        return text

    @property
    def pid(self) -> int:
        return int(self.hello.get("pid", self.proc.pid if self.proc else 0))

    @property
    def ops(self) -> set[str]:
        return set(self.hello.get("ops", []))

    @property
    def clock_modes(self) -> set[str]:
        """The ``set_clock`` modes the driver offers (``virtual``: timers move the clock)."""
        return set(self.hello.get("clock_modes", ["frozen", "offset"]))

    def call(self, op: str, args: dict[str, Any] | None = None, timeout: float | None = None) -> Answer:
        """Send one request and wait for its answer; kills the driver on a hang."""
        if self.proc is None or self.proc.stdin is None:
            raise DriverError(f"{self.spec.name}: not started")
        rid = self._next_id
        self._next_id += 1
        request: dict[str, Any] = {"id": rid, "op": op}
        if args is not None:
            request["args"] = args
        if self.validate:
            _validate(request, "request")
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as e:  # ValueError: its stdin was closed (killed on Ctrl-C)
            raise DriverError(f"{self.spec.name}: driver is gone ({e})", self.stderr()) from None
        wait = self.timeout if timeout is None else timeout
        try:
            if self.wrapper or op in LOADING_OPS:
                # strace stops and delays its tracee, and loading code compiles it (CPU, no
                # I/O, slow on a loaded machine): only the timeout can judge those
                line, stuck = self._lines.get(timeout=wait), None
            else:
                line, stuck = wait_line(self._lines, self.pid, self.cwd, wait)
        except queue.Empty:
            blocked = blocked_in(self.pid, self.cwd) if self.proc.poll() is None else None
            self.kill()
            where = f", blocked in {blocked}" if blocked else ""
            error = DriverError(
                f"{self.spec.name}: no answer to {op!r} within {wait:g} s{where} (driver killed)",
                self.stderr(),
            )
            error.hung, error.blocked, error.waited = op, blocked, wait
            raise error from None
        if stuck is not None:  # blocked or spinning: it will never answer, so do not wait it out
            self.kill()
            how = f"blocked in {stuck.where}" if stuck.kind == "hang" else f"spinning ({stuck.where})"
            error = DriverError(
                f"{self.spec.name}: no answer to {op!r}: {how} after {stuck.seconds:.2f} s (driver killed)",
                self.stderr(),
            )
            error.hung, error.blocked, error.waited, error.stuck = op, stuck.where, round(stuck.seconds, 2), stuck.kind
            raise error from None
        if line is None:
            code = self.proc.wait()
            raise DriverError(
                f"{self.spec.name}: driver exited (status {code}) during {op!r}", self.stderr()
            )
        try:
            message = json.loads(line)
        except ValueError:
            self.kill()
            raise DriverError(
                f"{self.spec.name}: junk on stdout during {op!r}: {line[:200]!r}", self.stderr()
            ) from None
        if self.validate:
            _validate(message, "answer")
        if not isinstance(message, dict) or message.get("id") != rid:
            self.kill()
            got = message.get("id") if isinstance(message, dict) else message
            raise DriverError(
                f"{self.spec.name}: answer to {op!r} has id {got!r}, expected {rid}", self.stderr()
            )
        clock, outcome = message.get("clock_ms"), message.get("outcome")
        declared = self.hello.get("outcome_kinds") is True
        if declared and message.get("ok") and outcome is None and op in KIND_OPS:
            raise DriverError(f"{self.spec.name}: protocol violation: its hello declares outcome_kinds, but the answer "
                              f"to {op!r} carries no outcome", self.stderr())
        return Answer(bool(message.get("ok")), message.get("result"), message.get("error"),
                      clock if isinstance(clock, int) else None,
                      outcome if isinstance(outcome, dict) else None, declared)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            inner = self.hello.get("pid")
            if self.wrapper and isinstance(inner, int) and inner != self.proc.pid:
                # a killed strace detaches its tracee, which would live on: end it too
                try:
                    os.kill(inner, signal.SIGKILL)
                except OSError:
                    pass

    def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None and stopping():
            self.kill()  # Ctrl-C: no polite exit to wait for
        if self.proc.poll() is None:
            try:
                self.call("exit", timeout=2.0)
            except DriverError:
                pass
            try:
                self.proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.kill()
        self._drain_stderr()  # what it said last, before the pipe goes
        with self._stderr_lock:  # never closed under a reader: its fd could be reused
            self._stderr_eof = True
            for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()
        if self._tmp is not None:
            remove_temp(self._tmp)
            self._tmp = None

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _validate(message: object, what: str) -> None:
    error = first_error(SCHEMA_PATH, message)
    if error is not None:
        raise DriverError(f"protocol violation in {what} at {error[0]}: {error[1]}")


@cache
def _hello_validator() -> Any:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/hello"})


def _validate_hello(result: object) -> None:
    for error in _hello_validator().iter_errors(result):
        raise DriverError(f"protocol violation in hello result at {error.json_path}: {error.message}")


def start_driver(
    spec: PeerSpec,
    env: dict[str, str],
    *,
    cwd: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    validate: bool = False,
    wrapper: list[str] | None = None,
) -> Driver:
    """Start a driver; ``wrapper`` prefixes its command (e.g. ``strace …`` or ``setpriv …``).
    None starts once the run is interrupted (``harness.drivers.interrupt``)."""
    return Driver(spec, env, cwd, timeout, validate, list(wrapper or [])).start()


def stderr_tail(text: str, lines: int = 3, *, besides: str = "") -> str:
    """The last few telling stderr lines, joined on one line: no stack frames, no blanks,
    no ``Node.js vNN`` banner, nothing already said in ``besides`` (the error message)."""
    keep = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("at ") or line.startswith("Node.js v") or line == "^":
            continue
        if line.removeprefix("memconform driver: ") in besides:
            continue
        keep.append(line)
    return " | ".join(keep[-lines:])


def preflight(specs: Sequence[PeerSpec], *, timeout: float = DEFAULT_TIMEOUT) -> list[ImplInfo]:
    """Start every peer once, in a throw-away sandbox, and ask ``hello``: before any run.

    A peer that cannot start or answer is one clear ``PeerUnavailable`` line (with the tail
    of its stderr), raised before a command has run anything, instead of a failure per
    scenario or a traceback per worker: a missing file, no node, a module that does not
    import or lacks the driver's exports, a driver that dies, hangs or breaks the protocol
    at ``hello``.  Nothing else escapes for a peer problem.  Returns each implementation as
    it named itself (``unknown`` where it did not say).
    """
    from ..reports.envelope import ImplInfo
    from .sandbox import Sandbox

    found: list[ImplInfo] = []
    for spec in specs:
        sandbox = Sandbox.create()
        try:
            try:
                with start_driver(spec, sandbox.env(), cwd=str(sandbox.root), timeout=timeout) as driver:
                    hello = driver.hello
            except DriverError as e:
                message = f"{e}"
                tail = stderr_tail(e.stderr, besides=message)
                raise PeerUnavailable(message + (f" (stderr: {tail})" if tail else "")) from None
            except OSError as e:  # the driver could not even be started (exec format, permissions)
                raise PeerUnavailable(f"{spec.name}: cannot start its driver: {e}") from None
            name, version, ops = hello.get("impl"), hello.get("version"), hello.get("ops")
            found.append(ImplInfo(
                spec.name,
                name if isinstance(name, str) and name else "unknown",
                version if isinstance(version, str) and version else "unknown",
                frozenset(str(o) for o in ops) if isinstance(ops, list) else None,
            ))
        finally:
            sandbox.remove()
    return found
