"""Configuration file ``memory.jsonc`` (S-CFG-1..11) and Appendix B-3.

Expected diagnostics and values marked "Node" were observed by running the JS core 0.3.9 under
Node 20 on the same file.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memconform.reference.config import (
    DEFAULT_CONFIG_TEXT,
    Rules,
    render_rules_to_markdown,
    rules_from_text,
    strip_jsonc,
)
from memconform.reference.jsjson import json_parse, to_js_json
from memconform.reference.serve import Server
from memconform.reference.session import Session
from memconform.reference.store import Store
from tests.conftest import StoreEnv
from tests.support import (
    CONFIG_DIAG,
    FALLBACK_RULES,
    REPO,
    FaultFs,
    ends,
    run_python,
    store_with,
    temps_in,
)

DEFAULT_ALWAYS = [
    "Any issue solved or fixed",
    "User preferences explicitly stated by the user",
    "Server or infrastructure configuration discovered or changed",
    "Reusable commands or workflows identified",
    "Hardware, model, or environment facts learned",
]
DEFAULT_NEVER = [
    "Code patterns derivable from the codebase or git history",
    "Debugging fix recipes — the fix is in the commit, not in memory",
    "Ephemeral task state that won't apply next session",
    "Things already documented in AGENTS.md or CLAUDE.md",
    "Large code blocks — summarize or link to the file path instead",
]
DEFAULT_ASK = [
    "Credentials, tokens, API keys",
    "Personal data",
    "Anything the user marks as private or ephemeral",
]
DEFAULT_KEYS = [
    "always_persist",
    "never_persist",
    "always_ask",
    "max_lines",
    "stale_after_days",
    "inject_every_n_turns",
    "handoff_keep",
    "auto_resume_after_threshold_compaction",
    "consolidate_on_compact",
    "shared_dir",
]

settings.register_profile("memconform-config", deadline=None, max_examples=200, database=None)
settings.load_profile("memconform-config")


def rules_js(env: StoreEnv) -> dict[str, Any]:
    return env.store.parse_rules().to_js()


def with_(**changes: Any) -> dict[str, Any]:
    return {**FALLBACK_RULES, **changes}


PARSE_IN_CHILD = """
import json, time
from memconform.reference.store import Store
diags = []
store = Store(diagnostics=diags.append)
t0 = time.monotonic()
rules = store.parse_rules().to_js()
elapsed = time.monotonic() - t0
print(json.dumps({"rules": rules, "diags": diags, "elapsed": elapsed,
                  "memory_rules": store.paths.memory_rules, "local": store.paths.local_dir}))
"""


# --- S-CFG-1 fallback record ---------------------------------------------------------------


def test_s_cfg_1_missing_file_is_recreated_with_defaults(env: StoreEnv) -> None:
    rules = env.store.parse_rules()
    assert env.exists("agent/memory.jsonc")
    assert (rules.max_lines, rules.stale_after_days) == (300, 180)
    assert (rules.inject_every_n_turns, rules.handoff_keep) == (5, 3)
    os.unlink(env.sandbox.path("agent/memory.jsonc"))
    again = env.store.parse_rules()
    assert env.exists("agent/memory.jsonc")
    assert again.to_js() == with_(
        alwaysPersist=DEFAULT_ALWAYS, neverPersist=DEFAULT_NEVER, alwaysAsk=DEFAULT_ASK
    )
    assert env.diagnostics == []


def test_s_cfg_1_failure_returns_fresh_fallback_with_empty_rule_arrays(env: StoreEnv) -> None:
    env.config("{")
    first = env.store.parse_rules()
    assert first.to_js() == FALLBACK_RULES
    assert render_rules_to_markdown(first) == ""
    first.always_persist.append("leak")
    first.max_lines = 1
    second = env.store.parse_rules()
    assert second.to_js() == FALLBACK_RULES
    assert second.always_persist is not first.always_persist
    assert Rules().always_persist is not Rules().always_persist
    assert list(Rules().to_js()) == list(FALLBACK_RULES)


# --- S-CFG-2 bootstrap -------------------------------------------------------------------


def test_s_cfg_2_legacy_rules_are_copied_and_backed_up(env: StoreEnv) -> None:
    legacy = '{ "max_lines": 123, "shared_dir": false }'
    env.put("agent/memory/RULES.jsonc", legacy)
    os.chmod(env.sandbox.path("agent/memory/RULES.jsonc"), 0o644)
    before = os.stat(env.sandbox.path("agent/memory/RULES.jsonc"))
    assert env.store.parse_rules().max_lines == 123
    for rel in ("agent/memory.jsonc", "agent/memory/RULES.jsonc.bak"):
        assert env.sandbox.path(rel).read_bytes() == legacy.encode()
        st_ = os.stat(env.sandbox.path(rel))
        assert stat.S_IMODE(st_.st_mode) == 0o600 and st_.st_nlink == 1
    after = os.stat(env.sandbox.path("agent/memory/RULES.jsonc"))
    assert (after.st_ino, after.st_mtime_ns, stat.S_IMODE(after.st_mode)) == (
        before.st_ino,
        before.st_mtime_ns,
        0o644,
    )
    assert env.read("agent/memory/RULES.jsonc") == legacy
    assert temps_in(env.agent) == [] and temps_in(env.local) == []
    assert env.diagnostics == []


def test_s_cfg_2_existing_backup_is_kept(env: StoreEnv) -> None:
    env.put("agent/memory/RULES.jsonc", '{"max_lines": 99}')
    env.put("agent/memory/RULES.jsonc.bak", "older backup")
    assert env.store.parse_rules().max_lines == 99
    assert env.read("agent/memory/RULES.jsonc.bak") == "older backup"
    assert env.read("agent/memory.jsonc") == '{"max_lines": 99}'


@pytest.mark.parametrize("kind", ["fifo", "dangling-symlink"])
def test_s_cfg_2_backup_name_taken_is_not_replaced(env: StoreEnv, kind: str) -> None:
    env.put("agent/memory/RULES.jsonc", '{"max_lines": 99}')
    bak = env.sandbox.path("agent/memory/RULES.jsonc.bak")
    if kind == "fifo":
        os.mkfifo(bak)
    else:
        os.symlink("nowhere", bak)  # existsSync follows it: "missing", then link hits EEXIST
    assert env.store.parse_rules().max_lines == 99
    mode = os.lstat(bak).st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISLNK(mode)
    assert env.read("agent/memory.jsonc") == '{"max_lines": 99}'
    assert temps_in(env.local) == [] and env.diagnostics == []


def test_s_cfg_2_legacy_symlink_is_followed(env: StoreEnv) -> None:
    env.put("agent/elsewhere.jsonc", '{"max_lines": 77}')
    os.makedirs(env.local)
    os.symlink("../elsewhere.jsonc", env.sandbox.path("agent/memory/RULES.jsonc"))
    assert env.store.parse_rules().max_lines == 77
    assert env.read("agent/memory.jsonc") == '{"max_lines": 77}'
    assert not os.path.islink(env.sandbox.path("agent/memory.jsonc"))


def test_s_cfg_2_broken_legacy_is_copied_then_fails_to_parse(env: StoreEnv) -> None:
    env.put("agent/memory/RULES.jsonc", '{ "max_lines": ')
    assert rules_js(env) == FALLBACK_RULES
    assert env.read("agent/memory.jsonc") == '{ "max_lines": '
    assert env.diagnostics == [CONFIG_DIAG + "Unexpected end of JSON input"]


def test_s_cfg_2_legacy_fifo_fails_without_publishing(env: StoreEnv) -> None:
    os.makedirs(env.local)
    os.mkfifo(env.sandbox.path("agent/memory/RULES.jsonc"))
    before = env.snapshot()
    assert rules_js(env) == FALLBACK_RULES
    assert env.snapshot() == before
    assert env.diagnostics == [CONFIG_DIAG + f"Unsafe non-regular file: {env.local}/RULES.jsonc"]


def test_s_cfg_2_agent_dir_created_recursively(make_env: Any) -> None:
    env = make_env()
    deep = os.path.join(env.sandbox.root, "x", "y", "agent")
    store = Store({**env.sandbox.env(), "PI_CODING_AGENT_DIR": deep}, clock=env.clock)
    assert store.parse_rules().max_lines == 300
    assert sorted(os.listdir(deep)) == ["memory.jsonc"]


@pytest.mark.parametrize("kind", ["file", "parent-file"])
def test_s_cfg_2_mkdir_failure_leads_to_fallback(env: StoreEnv, kind: str) -> None:
    if kind == "file":
        agent = os.path.join(env.sandbox.root, "agentfile")
        Path(agent).write_text("x")
        message = f"EEXIST: file already exists, mkdir '{agent}'"
    else:
        Path(env.sandbox.root, "afile").write_text("x")
        agent = os.path.join(env.sandbox.root, "afile", "agent")
        message = f"ENOTDIR: not a directory, mkdir '{agent}'"
    store = env.new_store(PI_CODING_AGENT_DIR=agent)
    assert store.parse_rules().to_js() == FALLBACK_RULES
    assert env.diagnostics == [CONFIG_DIAG + message]  # Node


def test_s_cfg_2_racing_creator_wins(env: StoreEnv) -> None:
    racer_text = '{"max_lines": 61, "shared_dir": false}\n'

    def racer(dst: str) -> None:
        Path(dst).write_text(racer_text)

    fs = FaultFs()
    race = fs.hook("link", run=racer, match=ends("/memory.jsonc"))
    store = store_with(env, fs)
    assert store.parse_rules().to_js() == with_(maxLines=61)
    assert race.fired == 1
    assert env.read("agent/memory.jsonc") == racer_text
    assert temps_in(env.agent) == []
    assert env.diagnostics == []


RACER_CHILD = """
import os, sys
path = sys.argv[1]
sys.stdout.write("ready\\n"); sys.stdout.flush()
sys.stdin.readline()
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b'{"max_lines": 62} // racer\\n')
os.close(fd)
sys.stdout.write("done\\n"); sys.stdout.flush()
"""


def test_s_cfg_2_racing_second_process_wins(env: StoreEnv) -> None:
    target = os.path.join(env.agent, "memory.jsonc")
    child = subprocess.Popen(
        [sys.executable, "-c", RACER_CHILD, target],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline() == "ready\n"

    def racer(dst: str) -> None:
        assert dst == target
        child.stdin.write("go\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        assert child.stdout.readline() == "done\n"  # type: ignore[union-attr]

    fs = FaultFs()
    fs.hook("link", run=racer, match=ends("/memory.jsonc"))
    store = store_with(env, fs)
    try:
        assert store.parse_rules().to_js() == with_(maxLines=62)
    finally:
        child.stdin.close()
        assert child.wait(timeout=10) == 0
    assert env.read("agent/memory.jsonc") == '{"max_lines": 62} // racer\n'
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644  # the racer's inode, not ours
    assert temps_in(env.agent) == [] and env.diagnostics == []


def _bootstrap_worker(env_vars: dict[str, str], barrier: Any, out: Any) -> None:
    diags: list[str] = []
    store = Store(env_vars, diagnostics=diags.append)
    barrier.wait(timeout=20)
    out.put((store.parse_rules().to_js(), diags))


def test_s_cfg_2_concurrent_bootstraps_publish_one_file(env: StoreEnv) -> None:
    ctx = multiprocessing.get_context("fork")
    n = 6
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [
        ctx.Process(target=_bootstrap_worker, args=(env.sandbox.env(), barrier, out))
        for _ in range(n)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=30) for _ in range(n)]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    expected = with_(
        alwaysPersist=DEFAULT_ALWAYS, neverPersist=DEFAULT_NEVER, alwaysAsk=DEFAULT_ASK
    )
    assert results == [(expected, [])] * n
    assert sorted(os.listdir(env.agent)) == ["memory.jsonc"]
    assert env.read("agent/memory.jsonc") == DEFAULT_CONFIG_TEXT


# --- S-CFG-3 default file ------------------------------------------------------------------


def test_s_cfg_3_default_file_order_values_and_mode(env: StoreEnv) -> None:
    env.store.parse_rules()
    path = env.sandbox.path("agent/memory.jsonc")
    text = path.read_text()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert text.startswith("{\n") and text.endswith("\n}\n")
    data = json_parse(strip_jsonc(text))
    assert isinstance(data, dict)
    assert list(data) == DEFAULT_KEYS
    assert data == {
        "always_persist": DEFAULT_ALWAYS,
        "never_persist": DEFAULT_NEVER,
        "always_ask": DEFAULT_ASK,
        "max_lines": 300,
        "stale_after_days": 180,
        "inject_every_n_turns": 5,
        "handoff_keep": 3,
        "auto_resume_after_threshold_compaction": False,
        "consolidate_on_compact": False,
        "shared_dir": False,
    }
    lines = text.split("\n")
    for i, line in enumerate(lines[1:-2], start=1):
        assert line.startswith("  "), line
        if line.startswith('  "'):
            key = line.split('"')[1]
            assert key in DEFAULT_KEYS
            assert lines[i - 1].startswith("  //"), f"no comment before {key}"
        elif not line.startswith("  //"):
            assert line.startswith("    ") or line == "  ],", line
    comments: dict[str, str] = {}
    for key in DEFAULT_KEYS:
        k = next(i for i, x in enumerate(lines) if x.startswith(f'  "{key}"'))
        j = k
        while lines[j - 1].startswith("  //"):
            j -= 1
        comments[key] = "\n".join(lines[j:k])
        assert comments[key], key
    assert "50" in comments["max_lines"] and "1000" in comments["max_lines"]
    assert "0" in comments["stale_after_days"] and "1" in comments["inject_every_n_turns"]
    assert "0" in comments["handoff_keep"]


def test_s_cfg_3_default_text_renders_the_rules(env: StoreEnv) -> None:
    md = render_rules_to_markdown(env.store.parse_rules())
    assert md == (
        "## Always persist\n"
        + "\n".join(f"- {x}" for x in DEFAULT_ALWAYS)
        + "\n\n## Never persist\n"
        + "\n".join(f"- {x}" for x in DEFAULT_NEVER)
        + "\n\n## Always ask before persisting\n"
        + "\n".join(f"- {x}" for x in DEFAULT_ASK)
    )


# --- S-CFG-4 reading -----------------------------------------------------------------------


def test_s_cfg_4_fifo_config_returns_promptly(env: StoreEnv) -> None:
    path = os.path.join(env.agent, "memory.jsonc")
    os.mkfifo(path)
    t0 = time.monotonic()
    out = run_python(PARSE_IN_CHILD, env=env.sandbox.env(), cwd=env.agent, timeout=15)
    assert time.monotonic() - t0 < 10 and out["elapsed"] < 2
    assert out["rules"]["maxLines"] == 300 and out["rules"] == FALLBACK_RULES
    assert out["diags"] == [CONFIG_DIAG + f"Unsafe non-regular file: {path}"]  # Node
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_s_cfg_4_directory_config_is_refused(env: StoreEnv) -> None:
    os.mkdir(os.path.join(env.agent, "memory.jsonc"))
    assert rules_js(env) == FALLBACK_RULES
    assert env.diagnostics == [CONFIG_DIAG + f"Unsafe non-regular file: {env.agent}/memory.jsonc"]


def test_s_cfg_4_symlinks_are_followed(env: StoreEnv) -> None:
    env.put("agent/real.jsonc", '{"max_lines": 88}')
    os.symlink("real.jsonc", os.path.join(env.agent, "memory.jsonc"))
    assert env.store.parse_rules().max_lines == 88
    assert os.path.islink(os.path.join(env.agent, "memory.jsonc"))
    assert env.diagnostics == []


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nowhere.jsonc", "ENOENT: no such file or directory, open '{path}'"),
        ("memory.jsonc", "ELOOP: too many symbolic links encountered, open '{path}'"),
    ],
)
def test_s_cfg_4_dangling_or_looping_symlink(env: StoreEnv, target: str, message: str) -> None:
    path = os.path.join(env.agent, "memory.jsonc")
    os.symlink(target, path)
    before = env.snapshot()
    assert rules_js(env) == FALLBACK_RULES
    assert env.snapshot() == before  # bootstrap's publish hit EEXIST and changed nothing
    assert env.diagnostics == [CONFIG_DIAG + message.format(path=path)]  # Node


# --- S-CFG-5 JSONC stripping ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ('{"a": "https://example.com//x"}', '{"a": "https://example.com//x"}'),
        ('{ "max_lines": 75, }', '{ "max_lines": 75 }'),
        ("a// x\nb", "a\nb"),
        ("a// x", "a\n"),
        ("a//", "a\n"),
        ("a// x\r\nb", "a\nb"),
        ('{"max_lines": 120}// x', '{"max_lines": 120}\n'),
        ('["a,]", "b,}", "c\\"//d", "e\\\\"// c\n]', '["a,]", "b,}", "c\\"//d", "e\\\\"\n]'),
        ("[1,\n  // c\n]", "[1\n  \n]"),
        ("[1,\u00a0\ufeff\u2028\t]", "[1\u00a0\ufeff\u2028\t]"),
        ("[1,\u0085]", "[1,\u0085]"),
        ("[1,,]", "[1,]"),
        ("{} /* c */", "{} /* c */"),
        ("/ /", "/ /"),
    ],
)
def test_s_cfg_5_strip_jsonc(text: str, stripped: str) -> None:
    assert strip_jsonc(text) == stripped


@pytest.mark.parametrize(
    ("text", "expected", "diag"),
    [
        (
            '{"always_persist": ["https://example.com//x"]}',
            {"alwaysPersist": ["https://example.com//x"]},
            None,
        ),
        ('{ "max_lines": 75, }', {"maxLines": 75}, None),
        ('{"max_lines": 120}// x', {"maxLines": 120}, None),
        ('{"a": "x//y", // c\n "max_lines": 61}', {"maxLines": 61}, None),
        ('{"max_lines": 60}//', {"maxLines": 60}, None),
        # Node: the wording of V8's JSON.parse errors, positions in the stripped text.
        (
            '\ufeff{"max_lines": 60}',
            {},
            'Unexpected token \'\ufeff\', "\ufeff{"max_lines": 60}" is not valid JSON',
        ),
        (
            '{"max_lines": 60 /* c */}',
            {},
            "Expected ',' or '}' after property value in JSON at position 17",
        ),
        ('{"a": [1,\u00a0]}', {}, "Expected ',' or ']' after array element in JSON at position 8"),
        (
            '{\n  // c\n  "max_lines": 300\n  "shared_dir": false\n}\n',
            {},
            "Expected ',' or '}' after property value in JSON at position 26",
        ),
        ('{ "a": 1, }x', {}, "Unexpected non-whitespace character after JSON at position 10"),
        ("{'max_lines': 60}", {}, "Expected property name or '}' in JSON at position 1"),
        ("", {}, "Unexpected end of JSON input"),
    ],
)
def test_s_cfg_5_parsed_through_stripping(
    env: StoreEnv, text: str, expected: dict[str, Any], diag: str | None
) -> None:
    env.config(text)
    assert rules_js(env) == with_(**expected)
    assert env.diagnostics == ([] if diag is None else [CONFIG_DIAG + diag])


def test_s_cfg_5_invalid_utf8_is_replaced_before_parsing(env: StoreEnv) -> None:
    env.put("agent/memory.jsonc", b'{"always_persist": ["\xff\xc3"], "max_lines": 77}')
    assert rules_js(env) == with_(alwaysPersist=["\ufffd\ufffd"], maxLines=77)
    env.put("agent/memory.jsonc", b'{"always_persist": ["\xff\xc3"], x}')
    assert rules_js(env) == FALLBACK_RULES
    assert env.diagnostics == [
        CONFIG_DIAG + "Expected double-quoted property name in JSON at position 27"
    ]


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.text(alphabet=st.sampled_from(list('ab/,]}"\\ \n\u00a0'))),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=15,
)


@given(json_like)
def test_s_cfg_5_plain_json_passes_unchanged(value: object) -> None:
    for indent in (None, 2):
        text = json.dumps(value, indent=indent, ensure_ascii=False)
        assert strip_jsonc(text) == text


@given(json_like)
def test_s_cfg_5_comments_and_trailing_commas_are_transparent(value: object) -> None:
    lines = json.dumps(value, indent=2, ensure_ascii=False).split("\n")
    noisy: list[str] = []
    for i, line in enumerate(lines):
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if following[:1] in ("]", "}") and not line.endswith(("[", "{")):
            line += ",\t"  # a trailing comma, then whitespace before the bracket
        noisy.append(line + ' // c, ] } "')
    assert json_parse(strip_jsonc("\n".join(noisy))) == json.loads(
        "\n".join(lines), parse_int=float
    )


# --- S-CFG-6 strict JSON -------------------------------------------------------------------


@pytest.mark.parametrize("text", ["[1,2]", '"s"', "3", "true", "false", "[]", '["max_lines", 60]'])
def test_s_cfg_6_non_object_top_level_is_all_missing(env: StoreEnv, text: str) -> None:
    env.config(text)
    assert rules_js(env) == FALLBACK_RULES
    assert env.diagnostics == []


def test_s_cfg_6_null_is_a_failure(env: StoreEnv) -> None:
    env.config("null")
    assert rules_js(env) == FALLBACK_RULES
    assert env.diagnostics == [
        CONFIG_DIAG + "Cannot read properties of null (reading 'always_persist')"
    ]


@pytest.mark.parametrize(
    ("text", "diag"),
    [  # Node
        ('{"max_lines": NaN}', 'Unexpected token \'N\', "{"max_lines": NaN}" is not valid JSON'),
        (
            '{"max_lines": Infinity}',
            'Unexpected token \'I\', ..."x_lines": Infinity}" is not valid JSON',
        ),
        ('{"max_lines": -Infinity}', "No number after minus sign in JSON at position 15"),
        ("NaN", '"NaN" is not valid JSON'),
        ('{"max_lines": 0x10}', "Expected ',' or '}' after property value in JSON at position 15"),
    ],
)
def test_s_cfg_6_nan_and_infinity_literals_are_rejected(
    env: StoreEnv, text: str, diag: str
) -> None:
    env.config(text)
    assert rules_js(env) == FALLBACK_RULES
    assert env.diagnostics == [CONFIG_DIAG + diag]


def test_s_cfg_6_numbers_are_doubles(env: StoreEnv) -> None:
    env.config(
        '{"max_lines": 1e400, "stale_after_days": 12345678901234567890, "handoff_keep": 1e400,'
        ' "always_persist": [12345678901234567890, 1e400, -1e400], "max_lines": 1e400}'
    )
    rules = env.store.parse_rules()
    assert rules.max_lines == 1000
    assert rules.stale_after_days == 12345678901234567890.0 == 1.2345678901234567e19
    assert rules.handoff_keep == math.inf
    assert render_rules_to_markdown(rules) == (
        "## Always persist\n- 12345678901234567000\n- Infinity\n- -Infinity"
    )
    out = json.dumps(to_js_json(rules.to_js()))
    assert '"staleAfterDays": 12345678901234567000' in out
    assert '"handoffKeep": null' in out
    assert '"alwaysPersist": [12345678901234567000, null, null]' in out


def test_s_cfg_6_protocol_result_serialises_like_json_stringify(env: StoreEnv) -> None:
    env.config('{"handoff_keep": 1e400, "stale_after_days": 12345678901234567890}')
    answer, stop = Server(env.store).answer('{"id": 1, "op": "parse_rules", "args": {}}')
    assert not stop and answer["ok"]
    text = json.dumps(answer)
    assert '"handoffKeep": null' in text
    assert '"staleAfterDays": 12345678901234567000' in text


def test_s_cfg_6_duplicate_keys_keep_the_last(env: StoreEnv) -> None:
    env.config('{"max_lines": 60, "max_lines": 70, "shared_dir": true, "shared_dir": false}')
    assert rules_js(env) == with_(maxLines=70)


# --- S-CFG-7 field extraction and clamps ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "changes"),
    [
        ('{"max_lines":10}', {"maxLines": 50}),
        ('{"max_lines":9999}', {"maxLines": 1000}),
        ('{"max_lines":50}', {"maxLines": 50}),
        ('{"max_lines":-5}', {"maxLines": 50}),
        ('{"inject_every_n_turns":0}', {"injectEveryNTurns": 1}),
        ('{"inject_every_n_turns":-0.5}', {"injectEveryNTurns": 1}),
        ('{"stale_after_days":0}', {"staleAfterDays": 0}),
        ('{"stale_after_days":-5}', {"staleAfterDays": 0}),
        ('{"handoff_keep":0}', {"handoffKeep": 0}),
        ('{"handoff_keep":-1}', {"handoffKeep": 0}),
        ('{"shared_dir":"true"}', {}),
        ('{"shared_dir":1}', {}),
        ('{"shared_dir":true}', {"sharedDir": True}),
        ('{"auto_resume_after_threshold_compaction":true}', {"autoResumeAfterThreshold": True}),
        ('{"consolidate_on_compact":true}', {"consolidateOnCompact": True}),
        ('{"consolidate_on_compact":"yes", "auto_resume_after_threshold_compaction": 1}', {}),
        ('{"max_lines": true, "stale_after_days": true}', {}),
        ('{"handoff_keep": "5", "inject_every_n_turns": null, "max_lines": [60]}', {}),
        (
            '{"max_lines": 75.5, "inject_every_n_turns": 2.5, "handoff_keep": 0.5}',
            {"maxLines": 75.5, "injectEveryNTurns": 2.5, "handoffKeep": 0.5},
        ),
        ('{"max_lines": 49.99999999999999}', {"maxLines": 50}),
        ('{"max_lines": 1000.0000001}', {"maxLines": 1000}),
        ('{"always_persist": "x", "never_persist": {"0": 1}, "always_ask": null}', {}),
        (
            '{"always_persist": [1, null, {"a": 1}, [2]], "unknown": 5}',
            {"alwaysPersist": [1, None, {"a": 1}, [2]]},
        ),
        ('{"MAX_LINES": 60, "maxLines": 60}', {}),
    ],
)
def test_s_cfg_7_extraction(env: StoreEnv, text: str, changes: dict[str, Any]) -> None:
    env.config(text)
    assert rules_js(env) == with_(**changes)
    assert env.diagnostics == []


def test_s_cfg_7_negative_zero_clamps_to_positive_zero(env: StoreEnv) -> None:
    env.config('{"stale_after_days": -0, "handoff_keep": -0, "max_lines": -0}')
    rules = env.store.parse_rules()
    assert rules.stale_after_days == 0 and math.copysign(1, rules.stale_after_days) == 1
    assert rules.handoff_keep == 0 and math.copysign(1, rules.handoff_keep) == 1
    assert rules.max_lines == 50


def test_s_cfg_7_booleans_are_not_numbers() -> None:
    rules = rules_from_text('{"max_lines": true, "stale_after_days": false, "handoff_keep": true}')
    assert (rules.max_lines, rules.stale_after_days, rules.handoff_keep) == (300, 180, 3)


# --- S-CFG-8 failure and diagnostic dedup ---------------------------------------------------


def test_s_cfg_8_same_failure_logged_once_per_store(env: StoreEnv) -> None:
    env.config("null")
    for _ in range(3):
        assert rules_js(env) == FALLBACK_RULES
    assert env.diagnostics == [
        CONFIG_DIAG + "Cannot read properties of null (reading 'always_persist')"
    ]
    env.new_store().parse_rules()  # a fresh process logs again
    assert len(env.diagnostics) == 2


def test_s_cfg_8_success_does_not_reset_and_a_new_message_logs(env: StoreEnv) -> None:
    null_diag = CONFIG_DIAG + "Cannot read properties of null (reading 'always_persist')"
    brace_diag = CONFIG_DIAG + "Expected property name or '}' in JSON at position 1"
    env.config("null")
    env.store.parse_rules()
    env.config('{"max_lines": 60}')
    assert env.store.parse_rules().max_lines == 60
    env.config("null")
    env.store.parse_rules()
    assert env.diagnostics == [null_diag]
    env.config("{")
    env.store.parse_rules()
    env.store.parse_rules()
    env.config("null")
    env.store.parse_rules()
    assert env.diagnostics == [null_diag, brace_diag, null_diag]


def test_s_cfg_8_session_never_fails_on_config(env: StoreEnv) -> None:
    env.config("{ broken")
    assert env.store.execute_write_memory("T", "c", "s") == 'Created memory topic "T" (t.md).'
    assert env.store.read_memory_index(env.store.parse_rules().max_lines) is not None
    session = Session(env.store)
    session.session_start()
    assert session.before_agent_start({"systemPrompt": "S"}) is not None
    assert env.diagnostics == [CONFIG_DIAG + "Expected property name or '}' in JSON at position 2"]


def test_s_cfg_8_stderr_line_format(env: StoreEnv) -> None:
    env.config("null")
    code = "from memconform.reference.store import Store\ns = Store()\ns.parse_rules()\ns.parse_rules()\n"
    code += "Store().parse_rules()\n"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**env.sandbox.env(), "PYTHONPATH": str(REPO)},
        capture_output=True,
        check=True,
    )
    line = (CONFIG_DIAG + "Cannot read properties of null (reading 'always_persist')\n").encode()
    assert proc.stderr == line * 2  # deduplicated within a store, again in a fresh one
    assert proc.stdout == b""


LONE_SURROGATE_CONFIG = '{"a": "' + "\U0001f600" * 5 + '", "bb": x}'


def test_s_cfg_8_message_context_can_split_a_surrogate_pair(env: StoreEnv) -> None:
    env.config(LONE_SURROGATE_CONFIG)
    env.store.parse_rules()
    # V8 cuts its 10-unit context window inside the pair, leaving a lone low surrogate.
    assert env.diagnostics == [
        CONFIG_DIAG + 'Unexpected token \'x\', ..."\ude00", "bb": x}" is not valid JSON'
    ]


def test_s_cfg_8_stderr_writes_lone_surrogate_as_replacement(env: StoreEnv) -> None:
    env.config(LONE_SURROGATE_CONFIG)
    proc = subprocess.run(
        [sys.executable, "-c", "from memconform.reference.store import Store\nStore().parse_rules()"],
        env={**env.sandbox.env(), "PYTHONPATH": str(REPO)},
        capture_output=True,
        check=True,
    )
    assert proc.stderr == (  # Node
        CONFIG_DIAG.encode()
        + b'Unexpected token \'x\', ..."\xef\xbf\xbd", "bb": x}" is not valid JSON\n'
    )


# --- S-CFG-9 no caching ----------------------------------------------------------------------


def test_s_cfg_9_edits_take_effect_on_the_next_call(env: StoreEnv) -> None:
    env.put("agent/memory/MEMORY.md", "# Memory Index\n\n- [Old](old.md) 2020-01-01 -- x\n")
    env.put("agent/memory/old.md", "old\n")
    env.config('{"stale_after_days": 0}')
    assert env.store.execute_write_memory("New", "c", "s") == 'Created memory topic "New" (new.md).'
    ts = "2026-08-07T01:02:50+00:00"
    assert env.read("agent/memory/MEMORY.md") == (
        f"# Memory Index\n\n- [Old](old.md) 2020-01-01 -- x\n\n- [New](new.md) {ts} -- s"
    )
    env.config('{"stale_after_days": 180}')
    assert (
        env.store.execute_write_memory("New2", "c", "s") == 'Created memory topic "New2" (new2.md).'
    )
    assert env.read("agent/memory/MEMORY.md") == (  # Node
        "# Memory Index\n\n- [Old](old.md) 2020-01-01 [stale?] -- x\n\n"
        f"- [New](new.md) {ts} -- s\n- [New2](new2.md) {ts} -- s"
    )


def test_s_cfg_9_shared_dir_toggle_is_read_each_call(env: StoreEnv) -> None:
    assert env.store.get_memory_dir() == env.local
    env.shared_mode()
    assert env.store.get_memory_dir() == env.shared
    env.config('{"shared_dir": false}')
    assert env.store.get_memory_dir() == env.local


# --- S-CFG-10 rendering ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "markdown"),
    [
        ({"alwaysPersist": ["A"]}, "## Always persist\n- A"),
        ({}, ""),
        (
            {"neverPersist": ["N"], "alwaysAsk": ["Q", "R"]},
            "## Never persist\n- N\n\n## Always ask before persisting\n- Q\n- R",
        ),
        (
            {"alwaysPersist": ["A"], "alwaysAsk": ["Q"]},
            "## Always persist\n- A\n\n## Always ask before persisting\n- Q",
        ),
        (
            {
                "alwaysPersist": [
                    1.0,
                    2.5,
                    None,
                    True,
                    False,
                    {"a": 1},
                    [1.0, [2.0, 3.0]],
                    [None, 1.0],
                    [[]],
                    [True, [False, None]],
                ]
            },
            "## Always persist\n- 1\n- 2.5\n- null\n- true\n- false\n- [object Object]\n- 1,2,3\n- ,1\n- \n- true,false,",
        ),
        (
            {"alwaysPersist": [1e21, -0.0, 1.0, 5e-7, ""]},
            "## Always persist\n- 1e+21\n- 0\n- 1\n- 5e-7\n- ",
        ),
        (
            {"alwaysPersist": ["multi\nline", "  pad  "]},
            "## Always persist\n- multi\nline\n-   pad  ",
        ),
        ({"maxLines": 75.5, "sharedDir": True}, ""),
    ],
)
def test_s_cfg_10_render_rules(record: dict[str, Any], markdown: str) -> None:
    assert render_rules_to_markdown(Rules.from_js(record)) == markdown


def test_s_cfg_10_rendered_from_file(env: StoreEnv) -> None:
    env.config(
        '{"always_persist": [1.0, [1,[2,3]], [null,1], [[]], [true,[false,null]], {}], "always_ask": ["x"]}'
    )
    assert render_rules_to_markdown(env.store.parse_rules()) == (
        "## Always persist\n- 1\n- 1,2,3\n- ,1\n- \n- true,false,\n- [object Object]"
        "\n\n## Always ask before persisting\n- x"
    )


# --- S-CFG-11 never rewritten --------------------------------------------------------------


def test_s_cfg_11_existing_file_is_never_written(env: StoreEnv) -> None:
    user_text = '{ "max_lines": 60, // mine\n  "stale_after_days": 9, }\n'
    env.config(user_text)
    path = env.sandbox.path("agent/memory.jsonc")
    os.chmod(path, 0o640)
    before = os.stat(path)
    store = env.store
    store.execute_write_memory("T", "c", "s")
    store.execute_write_memory("T", "d", "s2", mode="replace")
    store.execute_pin_memory("T", True)
    store.execute_pin_memory("T", False)
    store.execute_remove_memory("T")
    store.read_memory_index(60)
    store.read_index_entries()
    store.search_memory("x")
    store.retire_recap_entries()
    store.write_handoff(
        [{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}], "threshold", 3
    )
    env.new_store().parse_rules()
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns, stat.S_IMODE(after.st_mode)) == (
        before.st_ino,
        before.st_mtime_ns,
        0o640,
    )
    assert env.read("agent/memory.jsonc") == user_text
    assert store.parse_rules().max_lines == 60


def test_s_cfg_11_broken_user_file_persists(env: StoreEnv) -> None:
    env.config("{ oops")
    env.store.execute_write_memory("T", "c", "s")
    env.store.parse_rules()
    assert env.read("agent/memory.jsonc") == "{ oops"


# --- Appendix B-3 non-integral numbers --------------------------------------------------------


def test_s_cfg_7_b3_max_lines_fraction_slices_and_prints(env: StoreEnv) -> None:
    env.config('{"max_lines": 75.5}')
    env.put("agent/memory/MEMORY.md", "\n".join(f"l{i}" for i in range(100)))
    out = env.store.read_memory_index(env.store.parse_rules().max_lines)
    assert out == "\n".join(f"l{i}" for i in range(75)) + (  # Node
        "\n\n<!-- memory truncated: MEMORY.md exceeds 75.5-line limit; shorten the index -->"
    )


def test_s_cfg_7_b3_handoff_keep_fraction_disables_pruning(env: StoreEnv) -> None:
    env.config('{"handoff_keep": 0.5}')
    keep = env.store.parse_rules().handoff_keep
    for i in range(5):
        msgs = [{"role": "assistant", "content": [{"type": "text", "text": f"step {i} done"}]}]
        assert env.store.write_handoff(msgs, "threshold", keep) == "written"
    head = "## 2026-08-07T01:02:50+00:00 (threshold)\n\n- step {} done\n"
    blanks = [6, 5, 4, 3, 1]  # B-1: blank lines accumulate between retained sections
    assert env.read("agent/HANDOFF.md") == "".join(  # Node
        head.format(i) + "\n" * n for i, n in enumerate(blanks)
    )


def test_s_cfg_7_b3_inject_interval_fraction(env: StoreEnv) -> None:
    env.config('{"inject_every_n_turns": 2.5}')
    session = Session(env.store)
    session.session_start()
    injected = [
        turn
        for turn in range(1, 16)
        if session.before_agent_start({"systemPrompt": "S"}) is not None
    ]
    assert injected == [1, 5, 10, 15]
