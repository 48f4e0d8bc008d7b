"""The shared-store normalisation (SS-NORM-1…4) allows only what SPEC §20 allows.

Each planted store difference — a lost line, a changed flag, a dropped pin, a changed body, a
wrong suffix, a missing tombstone, … — must fail; the renderings §20 permits must pass.  The
last tests plant differences into real corpus scenarios and run the reference on them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from memconform.harness.drivers.peers import PeerSpec
from memconform.harness.gate.runner import Worker
from memconform.harness.gate.scenarios import SCENARIOS_DIR, Scenario, Then
from memconform.harness.oracles import store_norm
from memconform.harness.oracles.expect import check_then

D = "home/.agents/memory/"
TS = "2026-08-07T01:02:50+00:00"
INDEX = (
    "# Memory Index\n\n## Projects\n"
    f"- [Alpha](alpha.md) [pin] {TS} -- first one\n"
    "  - [Beta](beta.md) 2020-01-01 [stale?] -- old one\n"
    f"- [Gamma](gamma-2.md) {TS} -- third\n"
)
TOPIC = f'---\nname: "Alpha"\ndescription: "first one"\nlast_updated: {TS}\ncreated: {TS}\n---\n\nbody\n'


def idx_diff(actual: str, expected: str = INDEX) -> list[str]:
    return store_norm.differences(D + "MEMORY.md", expected.encode(), actual.encode())


PLANTED_INDEX = {
    "lost line": INDEX.replace("  - [Beta](beta.md) 2020-01-01 [stale?] -- old one\n", ""),
    "lost heading": INDEX.replace("## Projects\n", ""),
    "changed heading": INDEX.replace("## Projects", "## projects"),
    "dropped pin": INDEX.replace(" [pin]", ""),
    "added pin": INDEX.replace("[Beta](beta.md) ", "[Beta](beta.md) [pin] "),
    "dropped stale flag": INDEX.replace(" [stale?]", ""),
    "added stale flag": INDEX.replace(f"(gamma-2.md) {TS}", f"(gamma-2.md) {TS} [stale?]"),
    "wrong suffix": INDEX.replace("gamma-2.md", "gamma-3.md"),
    "changed name": INDEX.replace("[Gamma]", "[gamma]"),
    "changed summary": INDEX.replace("-- third", "-- Third"),
    "summary lost": INDEX.replace(" -- third", ""),
    "changed stamp": INDEX.replace(f"(gamma-2.md) {TS}", "(gamma-2.md) 2026-08-07T01:02:51+00:00"),
    "changed indentation": INDEX.replace("  - [Beta]", "- [Beta]"),
    "reordered lines": INDEX.replace(
        f"- [Alpha](alpha.md) [pin] {TS} -- first one\n  - [Beta](beta.md) 2020-01-01 [stale?] -- old one\n",
        f"  - [Beta](beta.md) 2020-01-01 [stale?] -- old one\n- [Alpha](alpha.md) [pin] {TS} -- first one\n"),
    "extra line": INDEX + "- [Delta](delta.md) 2026-08-01 -- new\n",
    "lost final LF": INDEX.rstrip("\n"),
    "extra blank line": INDEX + "\n",
    "extra metadata text": INDEX.replace("[pin] ", "[pin] note "),
    "text after CR": INDEX.replace("-- third", "-- third\rforged"),
    "entry turned to text": INDEX.replace("- [Gamma](gamma-2.md)", "- [Gamma](gamma-2..md)"),
}


@pytest.mark.parametrize("name", sorted(PLANTED_INDEX))
def test_ss_norm_1_planted_index_difference_fails(name: str) -> None:
    assert idx_diff(PLANTED_INDEX[name]), name


def test_ss_norm_1_flag_and_stamp_order_is_free() -> None:
    """PEER-11: the flags and the stamp of the metadata part may come in another order."""
    other = INDEX.replace(f"[pin] {TS} --", f"{TS} [pin] --").replace("2020-01-01 [stale?] --", "[stale?] 2020-01-01 --")
    assert other != INDEX
    assert idx_diff(other) == []


def test_ss_norm_1_identical_index_passes_and_fields_parse() -> None:
    assert idx_diff(INDEX) == []
    f = store_norm.entry_fields("  - [Beta](beta.md) 2020-01-01 [stale?] -- old one")
    assert f is not None and (f.lead, f.name, f.filename, f.pinned, f.stale, f.stamp, f.summary) == (
        "  ", "Beta", "beta.md", False, True, "2020-01-01", "old one")
    assert store_norm.entry_fields("- [H](.hidden.md) 2026-08-01 -- x") is None


def test_ss_norm_1_flag_inside_summary_is_summary_text() -> None:
    """A `[pin]` after ` -- ` is summary text, not a pin (PEER-11's reading; SS-IDX-4)."""
    assert idx_diff("- [A](a.md) 2026-08-01 -- x [pin]", "- [A](a.md) [pin] 2026-08-01 -- x")


def test_ss_norm_2_temporaries_by_pattern() -> None:
    files = {D + "MEMORY.md.tmp-123-1786064570000-k3j2": b"x", D + "a.md.tmp-9-abc": b"y"}
    assert store_norm.find(files, D + "MEMORY.md.tmp-*") == b"x"
    assert store_norm.find(files, D + "a.md.tmp-*") == b"y"
    assert store_norm.find(files, D + "b.md.tmp-*") is None
    assert store_norm.temp_name(D + "a.md.tmp-9-abc") == D + "a.md.tmp-*"
    assert store_norm.temp_name(D + "a.md.bak") == D + "a.md.bak"


def test_ss_norm_3_stamp_tokens_match_by_format_only() -> None:
    want = "- [A](a.md) ${TS} -- s"
    assert idx_diff(f"- [A](a.md) {TS} -- s", want) == []
    assert idx_diff("- [A](a.md) 2026-08-07T01:02:50+05:30 -- s", want) == []
    assert idx_diff("- [A](a.md) 2026-08-07 -- s", want)  # a date is not a local timestamp
    assert idx_diff("- [A](a.md) 2026-08-07T01:02:50Z -- s", want)
    assert idx_diff(f"- [A](a.md) {TS} -- t", want)  # the token covers the stamp only
    assert store_norm.text_equal("## ${DATE}\n", "## 2026-08-07\n")
    assert not store_norm.text_equal("## ${DATE}\n", f"## {TS}\n")
    assert not store_norm.text_equal("created: ${TS}\n", "created: \n")


PLANTED_TOPIC = {
    "changed body": TOPIC.replace("body", "Body"),
    "lost created": TOPIC.replace(f"created: {TS}\n", ""),
    "unquoted name": TOPIC.replace('name: "Alpha"', "name: Alpha"),
    "append heading rendering": TOPIC + f"\n## {TS}\n\nmore\n",
    "changed stamp": TOPIC.replace(f"created: {TS}", "created: 2026-01-01T00:00:00+00:00"),
    "CRLF body": TOPIC.replace("\nbody\n", "\nbody\r\n"),
}


@pytest.mark.parametrize("name", sorted(PLANTED_TOPIC))
def test_ss_norm_4_planted_topic_difference_fails(name: str) -> None:
    assert store_norm.differences(D + "alpha.md", TOPIC.encode(), PLANTED_TOPIC[name].encode()), name


@pytest.mark.parametrize(("want", "got"), [
    ("a.md\nb.md\n", "a.md\n"),  # a missing tombstone
    ("a.md\nb.md\n", "b.md\na.md\n"),  # reordered
    ("a.md\n", "a.md"),  # no final LF
    ("", "a.md\n"),  # a tombstone not cleared
])
def test_ss_norm_4_removal_list_bytes(want: str, got: str) -> None:
    assert store_norm.differences(D + ".ocl-removed", want.encode(), got.encode())


def test_ss_norm_4_missing_file_and_no_other_files(tmp_path: Path) -> None:
    """A topic under a wrong suffix fails twice: expected file missing, unexpected file present."""
    then = Then(store={D + "x-2.md": "x\n", D + "MEMORY.md": "# Memory Index\n"}, no_other_files=(D.rstrip("/"),))
    after = {D + "x-3.md": b"x\n", D + "MEMORY.md": b"# Memory Index\n"}
    failures = check_then(then, {}, after, tmp_path)
    assert {f.where for f in failures} == {f"store {D}x-2.md", f"directory {D.rstrip('/')}"}
    assert check_then(Then(store={D + "x-2.md": "x\n"}), {}, {D + "x-2.md": b"x\n"}, tmp_path) == []


# --- planted into real corpus scenarios, judged on the reference ------------------------------

CORPUS = SCENARIOS_DIR / "conformance" / "shared-store"


def _load(rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CORPUS / rel).read_text(encoding="utf-8"))
    return data


def _plant(data: dict[str, Any], path: str, edit: Any) -> Scenario:
    data = copy.deepcopy(data)
    store = data["then"]["store"]
    if edit is None:
        del store[path]
    else:
        store[path] = edit(store[path])
    return Scenario.from_data(data, CORPUS / "planted.json")


PLANTED_RUNS = {
    "missing tombstone": ("tombstones/remove-appends-to-list.json", D + ".ocl-removed", lambda s: s.replace("gone.md\n", "")),
    "dropped pin": ("pins/write-keeps-pin.json", D + "MEMORY.md", lambda s: s.replace(" [pin]", "")),
    "changed body": ("frontmatter/replace-discards-old-body.json", D + "state.md", lambda s: s.replace("new state", "old state")),
    "wrong suffix": ("names/third-collision-gets-3.json", D + "MEMORY.md", lambda s: s.replace("x-3.md", "x-4.md")),
    "lost foreign line": ("foreign/heading-kept-by-write-new.json", D + "MEMORY.md", lambda s: s.replace("## Projects\n", "")),
    "unlisted file": ("tombstones/remove-creates-list.json", D + ".ocl-removed", None),
}


@pytest.fixture(scope="module")
def worker() -> Any:
    w = Worker(PeerSpec("python"))
    yield w
    w.close()


def test_ss_norm_1_corpus_scenarios_pass_unplanted(worker: Worker) -> None:
    for rel, _, _ in PLANTED_RUNS.values():
        sc = Scenario.from_data(_load(rel), CORPUS / rel)
        out = worker.run(sc)
        assert out.status == "pass", (rel, out.reason, [f.render() for f in out.failures])


@pytest.mark.parametrize("name", sorted(PLANTED_RUNS))
def test_ss_norm_1_planted_corpus_difference_fails(worker: Worker, name: str) -> None:
    rel, path, edit = PLANTED_RUNS[name]
    out = worker.run(_plant(_load(rel), path, edit))
    assert out.status in ("fail", "error"), name


def test_ss_out_1_planted_outcome_fails(worker: Worker) -> None:
    data = _load("refusals/remove-pinned-changes-nothing.json")
    data["steps"][0]["expect"]["outcome"] = "ok"
    out = worker.run(Scenario.from_data(data, CORPUS / "planted.json"))
    assert out.status == "fail" and "outcome" in out.failures[0].where


def test_an_append_heading_stamp_is_a_date_or_a_timestamp() -> None:
    """SS-FMT-2 leaves the heading's rendering free: ``${STAMP}`` takes openpi's UTC date and
    OpenCode's timestamp (PEER-12), nothing else."""
    from memconform.harness.oracles.store_norm import text_equal

    want = "\nfirst\n\n## ${STAMP}\n\nsecond\n"
    assert text_equal(want, "\nfirst\n\n## 2026-08-07\n\nsecond\n")
    assert text_equal(want, "\nfirst\n\n## 2026-08-07T01:02:50+00:00\n\nsecond\n")
    assert not text_equal(want, "\nfirst\n\n## yesterday\n\nsecond\n")
    assert not text_equal(want, "\nfirst\n\nsecond\n")
