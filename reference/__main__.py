"""``python -m reference``: a small CLI over a real store, and the protocol server.

The store is found through the same variables as the JS core (``PI_CODING_AGENT_DIR``,
``PI_SHARED_MEMORY_HOME``, ``HOME``); ``--agent-dir``/``--shared-home`` override them, so the
real home is touched only when nothing else is given.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .edge import edge_store
from .errors import JsError
from .serve import serve


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m reference", description=__doc__)
    p.add_argument("--agent-dir", help="agent directory (default: $PI_CODING_AGENT_DIR)")
    p.add_argument("--shared-home", help="shared home (default: $PI_SHARED_MEMORY_HOME)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="speak the peer protocol on stdin/stdout")
    sub.add_parser("list", help="list index entries")
    show = sub.add_parser("show", help="show a topic's body")
    show.add_argument("filename")
    write = sub.add_parser("write", help="write a memory topic")
    write.add_argument("topic")
    write.add_argument("content")
    write.add_argument("--summary", required=True)
    write.add_argument("--pin", action="store_true")
    write.add_argument("--replace", action="store_true")
    remove = sub.add_parser("remove", help="remove an index entry")
    remove.add_argument("topic")
    pin = sub.add_parser("pin", help="pin (or --off: unpin) an entry")
    pin.add_argument("topic")
    pin.add_argument("--off", action="store_true")
    search = sub.add_parser("search", help="search names, summaries and bodies")
    search.add_argument("query")
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
            for e in store.read_index_entries():
                flags = "".join([" [pin]" if e.pinned else "", " [stale?]" if e.stale else ""])
                print(f"{e.name}\t{e.filename}\t{e.date}{flags}\t{e.summary}")
        elif args.command == "show":
            print(store.read_topic_content(args.filename))
        elif args.command == "write":
            mode = "replace" if args.replace else "append"
            print(store.execute_write_memory(args.topic, args.content, args.summary, args.pin, mode))
        elif args.command == "remove":
            print(store.execute_remove_memory(args.topic))
        elif args.command == "pin":
            print(store.execute_pin_memory(args.topic, not args.off))
        else:
            for h in store.search_memory(args.query):
                print(f"{h.match_type}\t{h.filename}\t{h.snippet}")
    except JsError as e:
        print(f"{e.kind}: {e.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
