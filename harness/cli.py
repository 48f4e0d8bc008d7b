"""``memconform`` (``python -m memconform.harness``): the command line of the harness.

Each subcommand lives in its own module under ``harness/commands/``.  Whatever goes wrong
before or around a run — a bad argument, a missing file, a peer that cannot start, Ctrl-C,
even a harness bug — ends as one line ``memconform <command>: …`` on stderr and the exit code
documented in ``--help`` (``EXIT_CODES_HELP``), never a traceback, unless
``MEMCONFORM_DEBUG=1`` asks for one.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from . import commands
from .checker.history import HistoryError
from .commands.common import SetupError, check_outputs, interrupted_end, new_report
from .drivers import interrupt
from .drivers.peers import DriverError, PeerUnavailable
from .gate.deviations import DeviationsError
from .gate.scenarios import ScenarioError
from .oracles.findings import EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_USAGE

DEBUG_ENV = "MEMCONFORM_DEBUG"


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line (``memconform <cmd>: …``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def command_modules(argv: Sequence[str] | None = None) -> list[ModuleType]:
    """Every subcommand's module, or only the one ``argv`` names (its file is the name with
    ``_`` for ``-``): a gate run does not pay for importing fuzz's Hypothesis and the rest."""
    names = sorted(info.name for info in pkgutil.iter_modules(commands.__path__))
    first = next((a for a in argv or () if not a.startswith("-")), None)
    if first is not None and first.replace("-", "_") in names:
        names = [first.replace("-", "_")]
    found = []
    for file_name in names:
        module = importlib.import_module(f"{commands.__name__}.{file_name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            found.append(module)
    return found


def _parser(modules: list[ModuleType]) -> argparse.ArgumentParser:
    p = _Parser(
        prog="memconform",
        description="Conformance harness for the flat-file agent memory store.",
        epilog=EXIT_CODES_HELP,
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for m in modules:
        m.add_arguments(sub.add_parser(m.NAME, help=m.HELP, description=m.HELP, epilog=EXIT_CODES_HELP))
    return p


def _path_error(e: OSError) -> str:
    what = e.strerror or type(e).__name__
    return f"{e.filename}: {what.lower()}" if e.filename is not None else what


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: Sequence[str] | None = None) -> int:
    modules = command_modules(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser(modules).parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2, already printed as one line)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    args.argv = list(sys.argv[1:] if argv is None else argv)
    by_name = {m.NAME: m for m in modules}
    name = f"memconform {args.command}"

    def fail(message: str, code: int = EXIT_USAGE) -> int:
        sys.stdout.flush()
        print(f"{name}: {_one_line(message)}", file=sys.stderr)
        return code

    previous = interrupt.install()
    try:
        check_outputs(args)
        code = int(by_name[args.command].run(args))
        if code == EXIT_INTERRUPTED or interrupt.stopping():  # its report is marked (``publish``)
            pressed = interrupt.stopping()  # a Ctrl-C, not a merged report of an interrupted shard
            interrupt.cleanup()
            if pressed and not interrupt.SAID.is_set():
                return fail("interrupted after the run's work was done; the report is whole, marked interrupted",
                            EXIT_INTERRUPTED)
            return EXIT_INTERRUPTED
        return code
    except KeyboardInterrupt:
        # a command without its own partial report: an empty one, marked interrupted
        interrupt.cleanup()
        try:
            return interrupted_end(args, new_report(args))
        except OSError as e:
            return fail(f"interrupted; the report could not be written: {_path_error(e)}", EXIT_INTERRUPTED)
    except DeviationsError as e:  # a deviations file: its own line, never a "scenario error"
        return fail(str(e))
    except ScenarioError as e:
        return fail(f"scenario error: {e}")
    except (SetupError, PeerUnavailable, HistoryError) as e:
        return fail(str(e))
    except DriverError as e:
        tail = " | ".join(e.stderr.strip().splitlines()[-3:])
        return fail(f"{e}" + (f" (stderr: {tail})" if tail else ""))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:
        return fail(_path_error(e))
    except BrokenPipeError:  # `memconform … | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_USAGE
    except Exception as e:
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        return fail(f"internal error {type(e).__name__}: {e}; set {DEBUG_ENV}=1 for the traceback")
    finally:
        interrupt.restore(previous)
