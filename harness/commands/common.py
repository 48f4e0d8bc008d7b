"""Arguments shared by several subcommands, and ``type=`` validators for counts and durations.

Every command takes the same report arguments (``add_report_arguments``) so a CI job learns
one set of flags; the validators turn a bad count into one argparse error line (exit 2)
instead of a traceback deep in a run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..drivers import interrupt
from ..drivers.peers import DEFAULT_TIMEOUT, PeerSpec, start_driver
from ..gate.regressions import DEFAULT_DIR
from ..oracles.findings import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    INTERRUPTED,
    Finding,
    exit_code,
    summary_line,
    verdict,
)
from ..reports import envelope
from ..reports.envelope import ImplInfo, RunReport


class SetupError(Exception):
    """Nothing can run as asked (bad path, nothing selected): one line, exit 2."""


class _OneImpl(argparse.Action):
    """``--impl`` of a command that tests one implementation: a second one is refused, never
    silently put in place of the first (``locks --impl pi:… --impl opencode:…`` tested only
    OpenCode)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if getattr(namespace, "_impl_given", False):
            raise argparse.ArgumentError(self, "given twice: this command tests one implementation "
                                               "(run it once per implementation)")
        namespace._impl_given = True
        setattr(namespace, self.dest, values)


def add_impl_arguments(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    helptext = "python | pi:<memory-core.mjs> | opencode:<ocl-memory.mjs> | node:<your-driver.mjs>"
    if many:
        p.add_argument("--impl", action="append", default=[], help=helptext + " (repeatable)")
    else:
        p.add_argument("--impl", action=_OneImpl, default="python", help=helptext)
    p.add_argument("--timeout", type=positive_float, default=DEFAULT_TIMEOUT, help="per-op timeout in seconds")
    p.add_argument("--validate-protocol", action="store_true", help="check every message against the schema")


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    """``--json PATH``, ``--export DIR``, ``--no-export``, ``--fail-on {violation,hazard}``."""
    p.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report (common top + findings)")
    p.add_argument("--html", type=Path, metavar="PATH", help="write a self-contained HTML report")
    p.add_argument(
        "--export", type=Path, default=DEFAULT_DIR, metavar="DIR",
        help="folder for the regression scenario of each finding (default: %(default)s)",
    )
    p.add_argument("--no-export", action="store_true", help="do not write regression scenarios (CI)")
    p.add_argument(
        "--fail-on", choices=("violation", "hazard"), default="violation",
        help="lowest severity that fails the run (exit 1); default: %(default)s",
    )


# every option naming a file a command writes, and the one naming a folder (``--export``)
OUTPUT_FILES = ("json", "junit", "html", "history", "out")


def _missing_folders(path: Path) -> tuple[Path, list[Path]]:
    """The nearest existing ancestor of ``path`` and the folders below it that do not exist."""
    missing: list[Path] = []
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        missing.append(ancestor)
        ancestor = ancestor.parent
    return ancestor, missing[::-1]


def _probe_file(path: Path) -> str | None:
    """Open ``path`` for writing as the writer will, and write nothing: an existing file is
    left as it is, a new one is removed again.  Permission bits lie to root and to procfs
    (``/proc/version`` is a regular file root may open, and a write there fails with EIO), so
    only an open and a write tell (issue 31 item 7)."""
    existed = path.exists()
    flags = os.O_WRONLY | os.O_NONBLOCK | (os.O_APPEND if existed else os.O_CREAT | os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        return f"cannot be written: {e.strerror}"
    try:
        os.write(fd, b"")
    except OSError as e:
        return f"cannot be written: {e.strerror}"
    finally:
        os.close(fd)
        if not existed:
            path.unlink(missing_ok=True)
    return None


def output_problem(path: Path, *, folder: bool = False) -> str | None:
    """Why ``path`` cannot be written (a file, or a folder when ``folder``), or None.

    Folders missing on the way are fine when their nearest existing ancestor is a writable
    folder (``check_outputs`` makes them, and says so); a file that exists, or whose folder
    exists, is opened for writing here, before any work."""
    if path.exists():
        if folder and not path.is_dir():
            return "is not a directory"
        if not folder and path.is_dir():
            return "is a directory"
        if folder:
            return None if os.access(path, os.W_OK | os.X_OK) else "is not writable"
        return _probe_file(path)
    ancestor, missing = _missing_folders(path)
    if not ancestor.is_dir():
        return f"{ancestor} is not a directory"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{ancestor} is not writable"
    if not folder and not missing:
        return _probe_file(path)
    return None


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path writable, checked before any work starts (issue 22 item 4, issue 31
    item 7): a run never ends by losing its results to ``--junit afile/r.xml`` or
    ``--json /proc/version``.  A missing folder on the way (``--json reports/r.json`` in a fresh
    clone, as the Makefile and docs/ci.md write it) is made now and named on stdout, and the
    file is then opened.  ``--export`` is checked when given (the default folder is made only if
    a finding needs it)."""
    for name in OUTPUT_FILES:
        path = getattr(args, name, None)
        if not isinstance(path, Path):
            continue
        if why := output_problem(path):
            raise SetupError(f"--{name} {path}: {why}")
        _, missing = _missing_folders(path)
        if missing:
            try:
                missing[-1].mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise SetupError(f"--{name} {path}: cannot make folder {missing[0]}: {e.strerror}") from None
            print(f"memconform {getattr(args, 'command', '')}: made folder {missing[0]} for --{name}", flush=True)
            if why := _probe_file(path):
                raise SetupError(f"--{name} {path}: {why}")
    export = getattr(args, "export", None)
    given = isinstance(export, Path) and export != DEFAULT_DIR and not getattr(args, "no_export", False)
    if given and (why := output_problem(Path(str(export)), folder=True)):
        raise SetupError(f"--export {export}: {why}")


def add_quiet_argument(p: argparse.ArgumentParser, what: str = "no progress line") -> None:
    """``--quiet``: the long commands' progress (``harness.reports.progress``) and chatter off."""
    p.add_argument("--quiet", action="store_true", help=what)


def quiet(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "quiet", False))


def wrote(args: argparse.Namespace, what: str, path: Path | str) -> None:
    """Every command says where it wrote each file: ``memconform <cmd>: wrote <what> <path>``."""
    print(f"memconform {getattr(args, 'command', '')}: wrote {what} {path}", flush=True)


def publish(args: argparse.Namespace, report: RunReport, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The finished report to ``--json`` and ``--html``, and as Markdown to
    ``$GITHUB_STEP_SUMMARY`` when set; each file written is named on stdout."""
    from ..reports import html as html_report
    from ..reports import markdown as markdown_report

    if interrupt.stopping():  # Ctrl-C, even one the command did not see: never a pass, always marked
        report.verdict = INTERRUPTED
        extra = (extra or {}) | {"interrupted": True, "stop_seconds": interrupt.since_stop()}
    data = report.to_json() | (extra or {})
    if getattr(args, "json", None):
        wrote(args, "JSON report", envelope.write(args.json, report, extra))
    if getattr(args, "html", None):
        wrote(args, "HTML report", html_report.write(args.html, data))
    summary_path = markdown_report.step_summary(data)
    if summary_path is not None:
        wrote(args, "step summary", summary_path)
    return data


def export_dir(args: argparse.Namespace) -> Path | None:
    """Where to export regressions, or None under ``--no-export``."""
    if getattr(args, "no_export", False):
        return None
    directory: Path = getattr(args, "export", DEFAULT_DIR)
    return directory


def fail_on_hazard(args: argparse.Namespace) -> bool:
    return getattr(args, "fail_on", "violation") == "hazard"


def _integer(text: str, least: int, words: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r} {words}")
    return value


def positive_int(text: str) -> int:
    """An integer ≥ 1 (``--writers``, ``--ops``, ``--parallel`` …)."""
    return _integer(text, 1, "must be at least 1")


def non_negative_int(text: str) -> int:
    """An integer ≥ 0 (a seed, a count that may be zero)."""
    return _integer(text, 0, "must not be negative")


def positive_float(text: str) -> float:
    """A number > 0 (``--minutes``, ``--timeout``, a budget in seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number greater than 0")
    return value


def int_list(text: str) -> list[int]:
    """Comma-separated integers ≥ 0, e.g. ``--points 1,3,7``."""
    items = [t.strip() for t in text.split(",")]
    if not items or any(not t for t in items):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers")
    values = []
    for t in items:
        try:
            v = int(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{t!r} in {text!r} is not an integer") from None
        if v < 0:
            raise argparse.ArgumentTypeError(f"{t!r} in {text!r} must not be negative")
        values.append(v)
    return values


# --- the run report every command writes -------------------------------------------------------


def new_report(args: argparse.Namespace, impls: Sequence[ImplInfo] = ()) -> RunReport:
    """A report started now, with the command line as the user typed it."""
    return RunReport(command=envelope.argv(getattr(args, "argv", None)), impls=list(impls))


def conclude(
    args: argparse.Namespace, report: RunReport, found: Sequence[Finding], *, executed: int,
    unknown: bool = False, extra: dict[str, Any] | None = None, nothing_ran: str = "",
    interrupted: bool = False,
) -> int:
    """Verdict, ``--json``, and exit code from the findings; a run that executed nothing is
    a setup error naming why (``nothing_ran``), never a pass; an interrupted one
    (``interrupted``) reports what finished, verdict ``interrupted``, exit 130."""
    hazard_gates = fail_on_hazard(args)
    report.findings = list(found)
    report.finish(verdict(found, executed=executed, unknown=unknown, fail_on_hazard=hazard_gates))
    if interrupted:
        return interrupted_end(args, report, extra)
    publish(args, report, extra)
    if executed <= 0:
        sys.stdout.flush()
        print(f"memconform {getattr(args, 'command', '')}: {nothing_ran or 'nothing ran'}", file=sys.stderr)
        return EXIT_USAGE
    return exit_code(report.verdict, fail_on_hazard=hazard_gates)


def interrupted_end(args: argparse.Namespace, report: RunReport, extra: dict[str, Any] | None = None) -> int:
    """Ctrl-C: the report of what finished, marked ``interrupted`` (never ``pass``), written
    where asked; one line on stderr; exit 130."""
    report.finish(INTERRUPTED)
    interrupt.STOP.set()  # publish marks it
    publish(args, report, extra)
    sys.stdout.flush()
    print(f"memconform {getattr(args, 'command', '')}: interrupted; the report holds what finished "
          f"({summary_line(report.findings)})", file=sys.stderr)
    interrupt.SAID.set()
    return EXIT_INTERRUPTED


def hello_ops(spec: PeerSpec, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """The ops a driver lists in ``hello`` (to say why nothing could run)."""
    from ..drivers.sandbox import Sandbox

    sandbox = Sandbox.create()
    try:
        with start_driver(spec, sandbox.env(), cwd=str(sandbox.root), timeout=timeout) as driver:
            return sorted(driver.ops, key=lambda op: (op not in ("hello", "reset", "set_clock", "exit"), op))
    finally:
        sandbox.remove()
