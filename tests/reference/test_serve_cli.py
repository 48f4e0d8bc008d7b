"""The protocol server answers every op of docs/ARCHITECTURE.md §3 in-process, and the small CLI works
on a real store without touching the real home."""

from __future__ import annotations

import io
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from memconform.reference.__main__ import main
from memconform.reference.serve import Server, serve
from memconform.reference.store import Store
from tests.conftest import StoreEnv

DESIGN_OPS = [
    "hello", "set_clock", "write_memory", "remove_memory", "pin_memory", "retire_recaps",
    "read_index", "index_entries", "topic_content", "search", "parse_rules", "render_rules",
    "write_handoff", "replace_latest_handoff", "read_handoff", "decide_compaction",
    "memory_dir", "exit",
]


def ask(server: Server, op: str, args: dict[str, Any] | None = None, rid: int = 1) -> dict[str, Any]:
    request: dict[str, Any] = {"id": rid, "op": op}
    if args is not None:
        request["args"] = args
    answer, _ = server.answer(json.dumps(request))
    return answer


@pytest.fixture
def server(env: StoreEnv) -> Server:
    return Server(env.new_store())


def test_server_lists_every_design_op(server: Server) -> None:
    ops = ask(server, "hello")["result"]["ops"]
    assert set(DESIGN_OPS) <= set(ops)


def test_server_round_trip_of_every_op(server: Server, env: StoreEnv) -> None:
    assert ask(server, "set_clock", {"now": "2026-08-07T01:02:50Z", "mode": "frozen", "tz": "UTC"})["ok"]
    created = ask(server, "write_memory", {"topic": "A", "content": "x", "summary": "s"})
    assert created == {"id": 1, "ok": True, "result": 'Created memory topic "A" (a.md).'}
    assert ask(server, "index_entries")["result"] == [
        {"name": "A", "filename": "a.md", "date": "2026-08-07T01:02:50+00:00", "summary": "s", "pinned": False, "stale": False}
    ]
    assert ask(server, "read_index", {"maxLines": 2})["result"].endswith("exceeds 2-line limit; shorten the index -->")
    assert ask(server, "topic_content", {"filename": "a.md"})["result"] == "x\n"
    assert ask(server, "search", {"query": "x"})["result"][0]["matchType"] == "body"
    assert ask(server, "pin_memory", {"topic": "A", "pin": True})["result"].startswith('Pinned "A".')
    assert ask(server, "remove_memory", {"topic": "A"})["result"].startswith('Cannot remove "A"')
    assert ask(server, "parse_rules")["result"]["maxLines"] == 300
    assert ask(server, "render_rules", {"rules": {"alwaysPersist": ["Z"]}})["result"] == "## Always persist\n- Z"
    messages = [{"role": "assistant", "content": [{"type": "text", "text": "need to deploy"}]}]
    assert ask(server, "write_handoff", {"messages": messages, "reason": "manual"})["result"] == "written"
    assert ask(server, "read_handoff")["result"].endswith("- need to deploy")
    assert ask(server, "decide_compaction", {"handoff": "need to deploy"})["result"] == {"action": "continue"}
    assert ask(server, "replace_latest_handoff", {"summary": "S", "reason": "threshold", "keep": 2})["result"] == "written"
    assert ask(server, "retire_recaps")["result"] is None
    assert ask(server, "memory_dir")["result"] == env.local
    assert ask(server, "get_memory_index")["result"] == env.local + "/MEMORY.md"
    assert ask(server, "to_slug", {"topic": "Node.js & npm!"})["result"] == "nodejs-npm"
    assert ask(server, "detect_incomplete_task", {"text": "pending"})["result"] is True
    assert ask(server, "parse_index_line", {"line": "nope"})["result"] is None
    assert ask(server, "parse_index_line", {"line": "- [A](a.md) x"})["result"]["filename"] == "a.md"
    assert "last-session-recap" in ask(server, "build_consolidation_prompt", {"rulesMarkdown": ""})["result"]
    assert "SUM" in ask(server, "build_compaction_consolidation_prompt", {"summary": "SUM"})["result"]
    assert ask(server, "reset_carry_over")["ok"]
    assert ask(server, "validate_tool", {"name": "pin_memory", "params": {"topic": "A"}})["result"] == ["pin: required"]
    tool = ask(server, "tool", {"name": "pin_memory", "params": {"topic": "A", "pin": False}})
    assert tool["result"]["content"][0]["text"].startswith('Unpinned "A".')
    hook = ask(server, "hook", {"name": "before_agent_start", "event": {"systemPrompt": "BASE"}})
    assert hook["result"]["result"]["systemPrompt"].startswith("BASE\n\n## Global Memory")
    events = ask(server, "memory_command", {"args": "remember", "idle": True})["result"]
    assert events[0]["send"].endswith("remember")
    assert ask(server, "advance_clock", {"seconds": 86400})["ok"]
    assert ask(server, "reset")["ok"]
    answer, stop = server.answer('{"id": 9, "op": "exit"}')
    assert answer["ok"] and stop


def test_s_err_7_server_errors_carry_kind_message_code(server: Server, env: StoreEnv) -> None:
    env.put("agent/memory", "not a directory")
    err = ask(server, "write_memory", {"topic": "A", "content": "x", "summary": "s"})["error"]
    assert err == {"kind": "Error", "message": f"EEXIST: file already exists, mkdir '{env.local}'", "code": "EEXIST"}
    assert ask(server, "remove_memory", {"topic": 5})["error"]["kind"] == "Error"  # mkdir fails first
    assert ask(server, "nope")["error"]["kind"] == "unsupported"
    assert ask(server, "set_clock", {"now": "2026-01-01T00:00:00Z", "mode": "bogus"})["error"]["kind"] == "ValueError"
    bad, _ = server.answer("{not json")
    assert bad["ok"] is False and bad["error"]["kind"] == "protocol"
    arr, _ = server.answer("[1]")
    assert arr["error"]["message"] == "not an object"


def test_s_fmt_18_server_prints_numbers_as_js(server: Server, env: StoreEnv) -> None:
    env.config('{"max_lines": 75.5, "stale_after_days": 1e400, "always_persist": [1.0, 12345678901234567890]}')
    rules = ask(server, "parse_rules")["result"]
    assert rules["maxLines"] == 75.5 and rules["staleAfterDays"] is None
    assert rules["alwaysPersist"] == [1, 12345678901234567000]


def test_advance_clock_needs_a_controlled_clock(env: StoreEnv) -> None:
    from memconform.reference.clock import SystemClock

    server = Server(Store(env.sandbox.env(), clock=SystemClock()))
    assert ask(server, "advance_clock", {"seconds": 1})["error"]["kind"] == "ValueError"


def test_serve_loop_answers_lines_and_stops_at_exit(env: StoreEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in env.sandbox.env().items():
        monkeypatch.setenv(key, value)
    stdin = io.StringIO('{"id": 0, "op": "hello"}\n\n{"id": 1, "op": "exit"}\n{"id": 2, "op": "hello"}\n')
    stdout = io.StringIO()
    assert serve(stdin, stdout) == 0
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [a["id"] for a in answers] == [0, 1]


def run_cli(env: StoreEnv, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--agent-dir", env.agent, "--shared-home", str(env.sandbox.home), *args])
    return code, capsys.readouterr().out


def test_s_path_1_cli_uses_the_given_agent_dir(env: StoreEnv, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(env, capsys, "write", "PostgreSQL Setup", "port 5433", "--summary", "db port", "--pin")
    assert code == 0 and out == 'Created memory topic "PostgreSQL Setup" (postgresql-setup.md).\n'
    assert Path(env.local, "postgresql-setup.md").exists()
    code, out = run_cli(env, capsys, "list")
    assert out.startswith("PostgreSQL Setup\tpostgresql-setup.md\t") and "[pin]" in out
    code, out = run_cli(env, capsys, "show", "postgresql-setup.md")
    assert out == "port 5433\n\n"
    code, out = run_cli(env, capsys, "search", "5433")
    assert out == "body\tpostgresql-setup.md\tport 5433\n"
    code, out = run_cli(env, capsys, "write", "PostgreSQL Setup", "port 6543", "--summary", "db", "--replace")
    assert out.startswith("Updated")
    code, out = run_cli(env, capsys, "pin", "postgres", "--off")
    assert out.startswith('Unpinned "PostgreSQL Setup".')
    code, out = run_cli(env, capsys, "remove", "postgres")
    assert out.startswith('Removed "PostgreSQL Setup"')


def test_s_err_7_cli_reports_errors_and_fails(env: StoreEnv, capsys: pytest.CaptureFixture[str]) -> None:
    env.put("agent/memory", "file")
    code = main(["--agent-dir", env.agent, "search", "x"])
    assert code == 1
    assert capsys.readouterr().err == f"Error: ENOTDIR: not a directory, scandir '{env.local}'\n"


def run_cli_err(env: StoreEnv, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--agent-dir", env.agent, "--shared-home", str(env.sandbox.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_s_remove_2_cli_not_found_exits_3(env: StoreEnv, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli_err(env, capsys, "remove", "Nothing")
    assert (code, out, err) == (3, "", "No memory index found.\n")
    run_cli(env, capsys, "write", "Alpha", "a", "--summary", "s")
    code, out, err = run_cli_err(env, capsys, "pin", "Nothing")
    assert (code, err) == (3, 'No entry found matching "Nothing".\n')


def test_s_remove_3_cli_refusals_exit_4_and_name_the_cli_verb(env: StoreEnv, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(env, capsys, "write", "Zeta One", "a", "--summary", "s", "--pin")
    code, out, err = run_cli_err(env, capsys, "remove", "Zeta One")
    assert code == 4 and out == ""
    # issue 31 item 11: the hint pastes into a shell: the topic quoted, the store options kept
    hint = shlex.join(["python", "-m", "memconform.reference", "--agent-dir", env.agent,
                       "--shared-home", str(env.sandbox.home), "pin", "--off", "Zeta One"])
    assert err == f'Cannot remove "Zeta One" — it is pinned. Unpin it first with: {hint}\n'
    pasted = shlex.split(hint)[3:]
    assert main(pasted) == 0 and capsys.readouterr().out.startswith('Unpinned "Zeta One"')
    run_cli(env, capsys, "write", "Zeta Two", "b", "--summary", "s")
    assert run_cli_err(env, capsys, "pin", "Zeta")[0] == 4  # ambiguous (S-IDX-8)
    assert run_cli_err(env, capsys, "write", "Bad]Topic", "x", "--summary", "s")[0] == 4  # S-WRITE-2
    assert run_cli_err(env, capsys, "write", "last-session-recap", "x", "--summary", "s")[0] == 4


def test_s_lock_8_cli_busy_exits_5(env: StoreEnv, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(env, capsys, "write", "Alpha", "a", "--summary", "s")
    Path(env.local, ".lock").write_text(f"{os.getpid()}\t1\tlive", encoding="utf-8")  # a live holder: us
    code, out, err = run_cli_err(env, capsys, "pin", "Alpha")
    assert code == 5 and out == "" and err.startswith("Error: memory store is busy")


def test_cli_exit_status_of_each_result_class() -> None:
    from memconform.reference.__main__ import exit_status, shown

    assert exit_status('Created memory topic "A" (a.md).') == 0
    assert exit_status('"A" is already pinned.') == 0
    assert exit_status("No memory index found.") == 3
    assert exit_status('Multiple entries match "Z", be more specific: Z1, Z2') == 4
    assert shown("Unpin it first with: /memory unpin A") == "Unpin it first with: python -m memconform.reference pin --off A"
    assert shown("Unpin it first with: /memory unpin it's", ["--agent-dir", "/a b"]) == (
        "Unpin it first with: python -m memconform.reference --agent-dir '/a b' pin --off 'it'\"'\"'s'")


def test_cli_nothing_found_exits_3(env: StoreEnv, capsys: pytest.CaptureFixture[str]) -> None:
    """README: exit 3 when nothing was found (no index, no matching entry), for every verb."""
    assert run_cli_err(env, capsys, "list") == (3, "", "No memory index found.\n")
    code, out, err = run_cli_err(env, capsys, "show", "nosuch.md")
    assert (code, out) == (3, "") and err.startswith("No topic file or entry 'nosuch.md' in ")
    assert run_cli_err(env, capsys, "search", "port") == (3, "", "No match for 'port'\n")
    run_cli(env, capsys, "write", "PostgreSQL Setup", "port 5433", "--summary", "db")
    assert run_cli_err(env, capsys, "list")[0] == 0
    code, out, _ = run_cli_err(env, capsys, "show", "postgresql-setup.md")
    assert code == 0 and out.startswith("port 5433")
    assert run_cli_err(env, capsys, "search", "port")[0] == 0
    assert run_cli_err(env, capsys, "show", "nosuch.md")[0] == 3
    assert run_cli_err(env, capsys, "search", "absent-word")[0] == 3


def test_cli_show_takes_a_topic_name_as_the_other_verbs_do(env: StoreEnv, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 31 item 11: ``show "PostgreSQL Setup"`` said "No topic file" (it wanted the file
    name) while remove and pin take the name or a unique part of it."""
    run_cli(env, capsys, "write", "PostgreSQL Setup", "port 5433", "--summary", "db")
    for asked in ("PostgreSQL Setup", "postgresql", "postgresql-setup.md"):
        code, out, err = run_cli_err(env, capsys, "show", asked)
        assert (code, err) == (0, "") and out.startswith("port 5433"), (asked, err)
    run_cli(env, capsys, "write", "PostgreSQL Tuning", "work_mem", "--summary", "db")
    code, out, err = run_cli_err(env, capsys, "show", "PostgreSQL")
    assert (code, out) == (4, "") and err.startswith('Multiple entries match "PostgreSQL"'), err
    code, out, err = run_cli_err(env, capsys, "show", "Nothing Here")
    assert (code, out) == (3, "") and err.startswith("No topic file or entry 'Nothing Here' in "), err
    Path(env.local, "postgresql-tuning.md").unlink()
    code, out, err = run_cli_err(env, capsys, "show", "PostgreSQL Tuning")
    assert (code, out) == (3, "") and err.startswith("No topic file 'postgresql-tuning.md' (of "), err
