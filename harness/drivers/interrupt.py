"""Ctrl-C (SIGINT) stops a run within a second and loses nothing that ran (issue 22 item 4).

On SIGINT the CLI (``cli.main``) calls ``stop()`` in the main thread: it sets ``STOP``, kills
every process this one started (drivers, writers, strace and its tracee, lock holders: found
in ``/proc``, so no launcher has to register them) and raises ``KeyboardInterrupt``.  An op in
flight then ends at once (its driver is gone); worker loops check ``stopping()`` and take no
more work, and ``start_driver`` refuses to start a new one, so a thread pool drains in
milliseconds.  The command writes the report of what finished, marked ``interrupted``, and
``cleanup()`` removes the temporary folders the run made (``sandbox.remove_all``).
"""

from __future__ import annotations

import _thread
import gc
import os
import signal
import threading
import time
from types import FrameType
from typing import Any

STOP = threading.Event()
_STOPPED_AT: list[float] = []  # monotonic time of the first ``stop()`` of this run
WORK_DONE = threading.Event()  # the run's work is over: a Ctrl-C now only marks the report
SAID = threading.Event()  # the one ``interrupted`` line is on stderr


def stopping() -> bool:
    """True once the run was interrupted: take no more work."""
    return STOP.is_set()


def _children_of(pid: int) -> list[int]:
    """The children of ``pid``: ``/proc/PID/task/*/children`` (one small read per thread)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                out += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Every process below ``pid`` (default: this one), children before their children."""
    out: list[int] = []
    todo = [os.getpid() if pid is None else pid]
    while todo:
        for child in _children_of(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def kill_descendants() -> int:
    """SIGKILL every process this one started (and theirs); how many were signalled.

    Killed children stay zombies until their ``Popen`` reaps them; the tree is read twice so
    a process forked while the first sweep ran (strace's tracee) goes too."""
    killed = 0
    for _ in range(2):
        for pid in descendants():
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def stop() -> None:
    """Stop the run: no new work, every child process killed (called on SIGINT)."""
    if not STOP.is_set():
        _STOPPED_AT[:] = [time.monotonic()]
    STOP.set()
    kill_descendants()


def since_stop() -> float:
    """Seconds since the run was stopped (0 if it was not): how long the stop took."""
    return round(time.monotonic() - _STOPPED_AT[0], 3) if _STOPPED_AT and STOP.is_set() else 0.0


def work_done() -> None:
    """The command has all its results and is writing them: a Ctrl-C from now on stops
    nothing half-way (the report is written whole, marked interrupted by ``publish``)."""
    WORK_DONE.set()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    stop()
    if WORK_DONE.is_set():
        return
    if _in_gc_callback(frame):
        # raised inside a gc callback (Hypothesis keeps one), the interrupt is swallowed as
        # "Exception ignored … Traceback" on stderr and lost: signal the main thread again from
        # another, so this handler runs anew once the callback is over (a real signal also
        # wakes a main thread blocked in a wait).  ``_thread``: ``Thread.start`` would wait here
        main = threading.main_thread().ident
        if main is not None:
            _thread.start_new_thread(signal.pthread_kill, (main, signal.SIGINT))
        return
    raise KeyboardInterrupt


def _in_gc_callback(frame: FrameType | None) -> bool:
    """Whether ``frame`` (or a caller of it) is a function of ``gc.callbacks``."""
    codes = {getattr(getattr(cb, "__func__", cb), "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def install() -> Any:
    """SIGINT stops the run (``stop``) and raises ``KeyboardInterrupt`` in the main thread;
    returns the handler it replaced (``restore``), None off the main thread."""
    STOP.clear()
    WORK_DONE.clear()
    SAID.clear()
    _STOPPED_AT.clear()
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, _on_sigint)


def restore(previous: Any) -> None:
    """The run is over: the handler ``install`` replaced is back, and new work may start."""
    STOP.clear()
    WORK_DONE.clear()
    SAID.clear()
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, previous)


def cleanup() -> None:
    """After an interrupted run: kill what is still running, remove the run's temp folders."""
    from .sandbox import remove_all

    stop()
    remove_all()
