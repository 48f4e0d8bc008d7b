"""Generated host scripts (issue 23 item 7): Hypothesis writes the session, the host runs it.

Why: the hand-written host scenarios pin the cases we thought of; generated sequences of
prompts, tool calls, manual and threshold compactions, new sessions and configuration edits
find the orders we did not.  Each generated script is an ordinary host scenario (the same
``host`` block), run by ``run.run_scenario`` on a real host and judged prompt by prompt
against the reference's session model; a failure shrinks to a short script and is written
out as a scenario file that ``memconform host --scenarios FILE`` replays.  A host step
takes seconds, so the ``host`` Hypothesis profile sizes the runs for that.

Generation keeps to what a scripted model can drive without guessing the host: a manual
compaction only after two runs in the session (pi keeps the latest run), a threshold
compaction only while the configuration makes its follow-up certain (auto-resume on,
consolidation off: exactly one ``Continue.``), and every run ending in text.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

TOPICS = ("Build", "Deploy Key", "Editor")
TEXTS = (
    "need to deploy the fix",
    "all work is complete",
    "- waiting for review",
    "* checked the **logs** today",
    "first line\nnext step is the tests",
    "```\ncode\n```",
    "# Heading only",
)
CONFIGS = (
    {"inject_every_n_turns": 1},
    {"inject_every_n_turns": 2, "handoff_keep": 1},
    {"handoff_keep": 0},
    {"auto_resume_after_threshold_compaction": True, "inject_every_n_turns": 1},
    {"auto_resume_after_threshold_compaction": True, "handoff_keep": 2},
)
THRESHOLD_TOKENS = 125000


def _tool_call(draw: st.DrawFn) -> dict[str, Any]:
    topic = draw(st.sampled_from(TOPICS))
    kind = draw(st.sampled_from(("write", "write", "pin", "remove")))
    if kind == "write":
        args: dict[str, Any] = {"topic": topic, "content": draw(st.sampled_from(("port 5433", "uses vim", "in the vault"))),
                                "summary": f"about {topic.lower()}"}
        if draw(st.booleans()):
            args["mode"] = draw(st.sampled_from(("append", "replace")))
        if draw(st.booleans()):
            args["pin"] = draw(st.booleans())
        return {"name": "write_memory", "arguments": args}
    if kind == "pin":
        return {"name": "pin_memory", "arguments": {"topic": topic, "pin": draw(st.booleans())}}
    return {"name": "remove_memory", "arguments": {"topic": topic}}


@st.composite
def host_scripts(draw: st.DrawFn, max_actions: int = 10) -> dict[str, Any]:
    """A scenario's ``host`` block (pi-host), with the configuration state tracked."""
    config: dict[str, Any] = {}
    runs = 0  # runs since the session began or was last compacted
    script: list[dict[str, Any]] = [{"do": "session"}]
    for number in range(draw(st.integers(min_value=1, max_value=max_actions))):
        choices = ["prompt", "prompt", "prompt", "config", "session"]
        if runs >= 2:
            choices.append("compact")
        auto = bool(config.get("auto_resume_after_threshold_compaction")) and not config.get("consolidate_on_compact")
        if auto and runs >= 1:
            choices.append("threshold")
        what = draw(st.sampled_from(choices))
        if what == "session":
            script += [{"do": "end"}, {"do": "session"}]
            runs = 0
        elif what == "config":
            config = dict(draw(st.sampled_from(CONFIGS)))
            script.append({"do": "put_file", "path": "agent/memory.jsonc", "content": json.dumps(config) + "\n"})
        elif what == "compact":
            script.append({"do": "compact"})
            runs = 1
        else:
            turns: list[dict[str, Any]] = [{"tool_calls": [_tool_call(draw)]}
                                           for _ in range(draw(st.integers(min_value=0, max_value=2)))]
            turns.append({"text": draw(st.sampled_from(TEXTS))})
            if what == "threshold":
                turns[-1]["prompt_tokens"] = THRESHOLD_TOKENS
                turns.append({"text": "resumed"})  # the one follow-up run, 'Continue.'
                runs = 2  # the kept run and the follow-up
            else:
                runs += 1
            script.append({"do": "prompt", "text": f"prompt {number + 1}", "model": turns})
    script.append({"do": "end"})
    return {"hosts": ["pi-host"], "script": script}


def scenario_data(block: dict[str, Any], name: str = "generated") -> dict[str, Any]:
    """A complete host scenario file for a generated block (what a failure is saved as)."""
    return {"id": f"hosts/{name}", "clauses": ["S-INJECT-4", "S-INJECT-9", "S-INJECT-10", "S-TOOLS-5"],
            "description": "a generated host script (harness/hosts/generate.py)", "host": block}
