"""S-ERR-8 at the protocol entry points: a non-string reaching toSlug / parseIndexLine raises.

Found by running the JS facade (issue 18) next to the JS core: serve's ``to_slug`` and
``parse_index_line`` converted the value with ToString, where the JS core calls
``topic.toLowerCase()`` / ``line.match()`` on it and raises a TypeError. Pinned by the
scenario ``errors/slug-and-index-line-non-string-type-error``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memconform.reference import Store
from memconform.reference.serve import Server


def ask(tmp_path: Path, op: str, args: dict[str, object]) -> dict[str, object]:
    server = Server(Store({"PI_CODING_AGENT_DIR": str(tmp_path / "pi"), "HOME": str(tmp_path)}))
    answer, _ = server.answer(json.dumps({"id": 1, "op": op, "args": args}))
    return answer


@pytest.mark.parametrize(
    ("op", "args", "message"),
    [
        ("to_slug", {"topic": 5}, "topic.toLowerCase is not a function"),
        ("to_slug", {"topic": None}, "Cannot read properties of null (reading 'toLowerCase')"),
        ("to_slug", {}, "Cannot read properties of undefined (reading 'toLowerCase')"),
        ("parse_index_line", {"line": ["- [A](a.md)"]}, "line.match is not a function"),
        ("parse_index_line", {"line": None}, "Cannot read properties of null (reading 'match')"),
        ("parse_index_line", {}, "Cannot read properties of undefined (reading 'match')"),
        ("maintain_index", {"config": {}}, "Cannot read properties of undefined (reading 'length')"),
        ("upsert_index_line", {"lines": None}, "Cannot read properties of null (reading 'length')"),
        ("maintain_index", {"lines": [5], "memoryDir": "/"}, "line.match is not a function"),
    ],
)
def test_s_err_8_non_string_raises_type_error(
    tmp_path: Path, op: str, args: dict[str, object], message: str
) -> None:
    answer = ask(tmp_path, op, args)
    assert answer["ok"] is False
    assert answer["error"] == {"kind": "TypeError", "message": message}


def test_s_fmt_8_s_idx_1_strings_still_answer(tmp_path: Path) -> None:
    assert ask(tmp_path, "to_slug", {"topic": "A b"})["result"] == "a-b"
    parsed = ask(tmp_path, "parse_index_line", {"line": "- [A](a.md) -- s"})["result"]
    assert isinstance(parsed, dict) and parsed["filename"] == "a.md"
