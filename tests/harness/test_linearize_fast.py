"""The fast checker answers what the plain one does (issue 22 item 6), on generated histories.

``check(fast=True)`` walks one likely linearization (``harness.checker.dive``), memoises steps by op
signature and, when a walk gets stuck, searches from the deepest of its ops with only the
last ``KEEP`` of each walk as nodes; ``check(fast=False)`` is the plain Wing–Gong–Lowe search
over every order.  On small concurrent store histories — drawn by Hypothesis, answered by the
SPEC model at a point inside each op's interval, some ops ``info`` (killed: they may or may not
have taken effect), some answers replaced (not linearizable) — both give one verdict, and a
failing sub-history the fast one reports fails the plain one too.  ``KEEP`` is drawn as 1 or 2
as well, so backtracking past a walk's nodes (``_Deep``, a search again with every op a node)
is exercised.  The seed is printed; ``MEMCONFORM_SEED`` replays it.
"""

from __future__ import annotations

import os
import random
from typing import Any

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from memconform.harness.checker import linearize
from memconform.harness.checker.history import Op
from memconform.harness.checker.linearize import NOT_LINEARIZABLE
from memconform.harness.checker.store_model import check
from memconform.harness.oracles import kind_model

from .test_linearize_props import ANSWER, TOPICS

SEED = int(os.environ.get("MEMCONFORM_SEED") or random.SystemRandom().randrange(2**32))
KINDS = {"write_memory": ["created", "updated"],
         "remove_memory": ["removed", "not_found", "no_index", "pinned_refused", "ambiguous"],
         "pin_memory": ["pinned", "unpinned", "already_pinned", "already_unpinned", "not_found", "no_index"]}


@st.composite
def histories(draw: st.DrawFn) -> list[Op]:
    """2–4 processes of 1–5 sequential ops over 1–3 look-alike topics, answered by the model
    at a drawn point of each interval; maybe an ``info`` op, maybe one answer replaced."""
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3, unique=True))
    plans: list[tuple[str, str, dict[str, Any], int, int, int]] = []
    for p in range(draw(st.integers(2, 4))):
        t = draw(st.integers(0, 8))
        for _ in range(draw(st.integers(1, 5))):
            name = draw(st.sampled_from(sorted(KINDS)))
            args: dict[str, Any] = {"topic": draw(st.sampled_from(topics))}
            if name == "write_memory":
                args |= {"content": "c", "summary": "s"}
                if draw(st.integers(0, 4)) == 0:
                    args["pin"] = True
            elif name == "pin_memory":
                args["pin"] = draw(st.booleans())
            length = draw(st.integers(1, 20))
            plans.append((f"p{p}", name, args, t, t + length, t + draw(st.integers(0, length))))
            t += length + draw(st.integers(1, 5))
    info = {i for i in range(len(plans)) if draw(st.integers(0, 9)) == 0}
    happened = {i for i in info if draw(st.booleans())}
    state, kinds = kind_model.State(), {}
    for i in sorted(range(len(plans)), key=lambda i: (plans[i][5], i)):
        if i not in info or i in happened:
            state, kinds[i] = kind_model.apply(state, plans[i][1], plans[i][2], bodies=False)
    ops = [Op(i, proc, name, args, start, None, "info", None) if i in info
           else Op(i, proc, name, args, start, end, "ok", ANSWER[kinds[i]])
           for i, (proc, name, args, start, end, _) in enumerate(plans)]
    definite = [o for o in ops if o.type == "ok"]
    if definite and draw(st.booleans()):
        victim = draw(st.sampled_from(definite))
        victim.result = ANSWER[draw(st.sampled_from(KINDS[victim.op]))]
    return ops


@seed(SEED)
@settings(max_examples=150, deadline=None, database=None)
@given(histories(), st.booleans(), st.sampled_from([1, 2, linearize.KEEP]))
def test_the_fast_checker_answers_what_the_plain_one_does(ops: list[Op], partition: bool, keep: int) -> None:
    print(f"fast checker property seed {SEED} (MEMCONFORM_SEED={SEED} replays it)")
    before, linearize.KEEP = linearize.KEEP, keep
    try:
        fast = check(ops, partition=partition, fast=True)
    finally:
        linearize.KEEP = before
    plain = check(ops, partition=partition, fast=False)
    assert fast.status == plain.status, f"seed {SEED}: fast {fast.summary()}\nplain {plain.summary()}"
    if fast.status == NOT_LINEARIZABLE:
        assert fast.failing_partition == plain.failing_partition
        assert check(fast.failing_ops, fast=False, shrink=False).status == NOT_LINEARIZABLE, f"seed {SEED}"
