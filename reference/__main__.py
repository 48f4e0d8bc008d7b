"""``python -m memconform.reference``: a small CLI over a real store, and the protocol server.

The store is found through the same variables as the JS core (``PI_CODING_AGENT_DIR``,
``PI_SHARED_MEMORY_HOME``, ``HOME``); ``--agent-dir``/``--shared-home`` override them, so the
real home is touched only when nothing else is given.

Exit status: 0 done, 1 an error was raised, 2 bad arguments, 3 not found (no index to
``list``, no topic file to ``show``, no entry matching a ``remove``/``pin`` or a ``search``), 4 refused (an invalid topic, an ambiguous or pinned entry), 5 busy (another
tool holds the lock: retry).  The store's result texts are SPEC's, the tool's own; where one
names the tool's command (``/memory unpin``), this CLI shows its own verb instead.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence

from .edge import edge_store
from .errors import JsError
from .fs import is_regular_file
from .lock import LOCK_BUSY_MESSAGE
from .serve import serve
from .store import NO_INDEX, NOT_FOUND_TOPIC

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_REFUSED, EXIT_BUSY = 0, 1, 2, 3, 4, 5
_NOT_FOUND = ("No entry found matching ", NO_INDEX)
_REFUSED = ("Invalid topic:", "Reserved topic:", "Multiple entries match ", "Cannot remove ")
_TOOL_UNPIN = "Unpin it first with: /memory unpin "


def exit_status(result: str) -> int:
    """What a result text means for a shell: done, not found, refused or busy (S-REMOVE-2/3)."""
    if result == LOCK_BUSY_MESSAGE:
        return EXIT_BUSY
    if result.startswith(_NOT_FOUND):
        return EXIT_NOT_FOUND
    if result.startswith(_REFUSED):
        return EXIT_REFUSED
    return EXIT_OK


def shown(result: str, options: Sequence[str] = ()) -> str:
    """The result as this CLI prints it: its own verb where the text names the tool's command,
    as a command that pastes into a shell (the topic quoted, the store ``options`` kept)."""
    head, sep, topic = result.partition(_TOOL_UNPIN)
    if not sep:
        return result
    command = ["python", "-m", "memconform.reference", *options, "pin", "--off", topic]
    return f"{head}Unpin it first with: {shlex.join(command)}"


def _store_options(args: argparse.Namespace) -> list[str]:
    """The ``--agent-dir`` / ``--shared-home`` this run was given, to repeat in a hint."""
    pairs = (("--agent-dir", args.agent_dir), ("--shared-home", args.shared_home))
    return [word for flag, value in pairs if value for word in (flag, value)]


def _parser() -> argparse.ArgumentParser:
    fmt = argparse.ArgumentDefaultsHelpFormatter
    p = argparse.ArgumentParser(prog="python -m memconform.reference", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent-dir", help="agent directory: memory.jsonc, HANDOFF.md, memory/ "
                   "(default: $PI_CODING_AGENT_DIR, else ~/.pi/agent)")
    p.add_argument("--shared-home", help="home of the shared store .agents/memory/ "
                   "(default: $PI_SHARED_MEMORY_HOME, else $HOME)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="speak the peer protocol (JSON lines) on stdin/stdout")
    sub.add_parser("list", help="list index entries: name, file, date and flags, summary")
    show = sub.add_parser("show", help="show a topic's body", formatter_class=fmt)
    show.add_argument("filename", metavar="topic", help="the topic file as listed (postgresql-setup.md), or a "
                      "name or a unique part of one, as remove and pin take it (\"PostgreSQL Setup\")")
    write = sub.add_parser("write", help="write a memory topic", formatter_class=fmt)
    write.add_argument("topic", help="the topic's name (its file name is derived from it)")
    write.add_argument("content", help="the text to append (or, with --replace, the new body)")
    write.add_argument("--summary", required=True, help="the one-line summary shown in the index")
    write.add_argument("--pin", action="store_true", help="pin the entry (never marked stale)")
    write.add_argument("--replace", action="store_true", help="replace the body instead of appending")
    remove = sub.add_parser("remove", help="remove an index entry (the topic file stays)", formatter_class=fmt)
    remove.add_argument("topic", help="a name or file name, or a unique part of one")
    pin = sub.add_parser("pin", help="pin (or --off: unpin) an entry", formatter_class=fmt)
    pin.add_argument("topic", help="a name or file name, or a unique part of one")
    pin.add_argument("--off", action="store_true", help="unpin instead of pinning")
    search = sub.add_parser("search", help="search names, summaries and bodies", formatter_class=fmt)
    search.add_argument("query", help="text to look for (case-insensitive)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    env = dict(os.environ)
    if args.agent_dir:
        env["PI_CODING_AGENT_DIR"] = args.agent_dir
    if args.shared_home:
        env["PI_SHARED_MEMORY_HOME"] = args.shared_home
    if args.command == "serve":
        os.environ.update(env)
        return serve()
    store = edge_store(env)
    try:
        if args.command == "list":
            if not is_regular_file(store.fs, store.get_memory_index()):
                print(NO_INDEX, file=sys.stderr)
                return EXIT_NOT_FOUND
            for e in store.read_index_entries():
                flags = "".join([" [pin]" if e.pinned else "", " [stale?]" if e.stale else ""])
                print(f"{e.name}\t{e.filename}\t{e.date}{flags}\t{e.summary}")
        elif args.command == "show":
            body = store.read_topic_content(args.filename)
            if body == NOT_FOUND_TOPIC:
                filename, why = store.find_entry_file(args.filename)
                if filename is None:
                    status = exit_status(why)
                    print(why if status == EXIT_REFUSED else
                          f"No topic file or entry {args.filename!r} in {store.get_memory_dir()}", file=sys.stderr)
                    return status
                body = store.read_topic_content(filename)
                if body == NOT_FOUND_TOPIC:
                    print(f"No topic file {filename!r} (of {args.filename!r}) in {store.get_memory_dir()}",
                          file=sys.stderr)
                    return EXIT_NOT_FOUND
            print(body)
        elif args.command in ("write", "remove", "pin"):
            if args.command == "write":
                mode = "replace" if args.replace else "append"
                result = store.execute_write_memory(args.topic, args.content, args.summary, args.pin, mode)
            elif args.command == "remove":
                result = store.execute_remove_memory(args.topic)
            else:
                result = store.execute_pin_memory(args.topic, not args.off)
            status = exit_status(result)
            print(shown(result, _store_options(args)), file=sys.stdout if status == EXIT_OK else sys.stderr)
            return status
        else:
            hits = store.search_memory(args.query)
            for h in hits:
                print(f"{h.match_type}\t{h.filename}\t{h.snippet}")
            if not hits:
                print(f"No match for {args.query!r}", file=sys.stderr)
                return EXIT_NOT_FOUND
    except JsError as e:
        print(f"{e.kind}: {e.message}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
