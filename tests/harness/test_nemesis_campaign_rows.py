"""The campaign's unexplained rows (docs/NEMESIS-CAMPAIGN.md), each reduced to its cause and
run deterministically against the real peer that shows it (skipped where the peer is absent).

Row 2eef2538f1 (not-linearizable, OpenCode + reference, errno): OpenCode's write of a topic
whose file a shared remove left on disk first opens that file for reading; when that open
fails (the nemesis injected ENOSPC), OpenCode does not fail the write: it creates
``<slug>-2.md`` and points the index there, so the topic moves to a second file while the
first stays on disk.  By SPEC's model a write after a shared remove rewrites the self-named
file (``Memory updated``), which is what OpenCode answers without the fault.
"""

from __future__ import annotations

import os

import pytest

from memconform.harness.drivers.peers import PeerSpec, start_driver
from memconform.harness.drivers.sandbox import Sandbox
from memconform.harness.faults.strace import strace_unavailable
from memconform.harness.interleave import nemesis as nm
from memconform.harness.writers.engine import prepare_shared

PLUGIN = os.environ.get("MEMCONFORM_OPENCODE_PLUGIN", "")
needs = pytest.mark.skipif(not PLUGIN or strace_unavailable() is not None,
                           reason="needs MEMCONFORM_OPENCODE_PLUGIN (openclaude's ocl-memory.mjs) and strace")


def _rewrite_after_shared_remove(inject: bool) -> tuple[str, list[str], str]:
    """The reference writes "Delta Keys", OpenCode removes it (the file stays, tombstoned),
    OpenCode writes it again, optionally with ENOSPC on its first open of delta-keys.md."""
    sb = Sandbox.create()
    try:
        prepare_shared(sb)
        d, env = sb.shared_dir, sb.env()
        oc_spec = PeerSpec.parse(f"opencode:{PLUGIN}")
        with start_driver(PeerSpec.parse("python"), env, cwd=str(sb.root)) as py, \
                start_driver(oc_spec, env, cwd=str(sb.root)) as remover, \
                start_driver(oc_spec, env, cwd=str(sb.root)) as writer:
            assert py.call("write_memory", {"topic": "Delta Keys", "content": "tok-w0-81", "summary": "w0 81"}).ok
            assert remover.call("remove_memory", {"topic": "Delta Keys"}).ok
            fault = nm.attach(writer.pid, "openat", d / "delta-keys.md", "error=ENOSPC:when=1",
                              sb.root / "fault.strace") if inject else None
            answer = writer.call("write_memory", {"topic": "Delta Keys", "content": "tok-w1-43", "summary": "w1 43"})
            log = ""
            if fault is not None:
                fault.detach()
                log = (sb.root / "fault.strace").read_text()
        text = str(answer.result if answer.ok else answer.error)
        return text, sorted(p.name for p in d.iterdir() if p.suffix == ".md"), log
    finally:
        sb.remove()


@needs
def test_row_2eef2538f1_an_open_error_moves_an_opencode_topic_to_a_second_file() -> None:
    """S-WRITE-6 (one topic, one file), S-INV-3: reproduced 3 of 3, never without the fault."""
    plain, files, _ = _rewrite_after_shared_remove(inject=False)
    assert plain.startswith("Memory updated:") and files == ["MEMORY.md", "delta-keys.md"], (plain, files)
    for _ in range(3):
        text, files, log = _rewrite_after_shared_remove(inject=True)
        assert "O_RDONLY" in log and "ENOSPC" in log and "(INJECTED)" in log, log  # the open of the old file
        assert text.startswith("Memory created:") and "delta-keys-2.md" in text, text
        assert files == ["MEMORY.md", "delta-keys-2.md", "delta-keys.md"], files
