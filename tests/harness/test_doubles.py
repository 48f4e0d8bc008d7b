"""The shared Fs doubles (harness/faults/doubles.py): what the rollback machine relies on.

The import rules of the faults wing are tested in ``test_layout.py``.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from memconform.harness.faults.doubles import FaultFs
from memconform.reference.errors import NodeError


def test_mutating_calls_are_numbered_and_a_failing_close_releases_the_descriptor(tmp_path: Path) -> None:
    fs = FaultFs()
    target = str(tmp_path / "f")
    fs.fail(nth=3, err=errno.EIO, mutating=True)  # open(w), write, close
    fd = fs.open(target, os.O_WRONLY | os.O_CREAT, 0o644)
    fs.write(fd, b"x")
    with pytest.raises(NodeError):
        fs.close(fd)
    with pytest.raises(OSError) as closed:
        os.fstat(fd)
    assert closed.value.errno == errno.EBADF
    assert [c.name for c in fs.mutating()] == ["open", "write", "close"]
    assert [(c.name, e) for c, e in fs.fired] == [("close", errno.EIO)]
    assert fs.mutating()[0].trace == ("openat", target, 1) and fs.mutating()[1].trace == ("write", target, 1)


def test_every_rule_counts_a_call_an_earlier_rule_failed(tmp_path: Path) -> None:
    fs = FaultFs()
    fs.fail("mkdir", nth=1, err=errno.ENOSPC)
    fs.fail("mkdir", nth=2, err=errno.EACCES)
    for err in (errno.ENOSPC, errno.EACCES):
        with pytest.raises(NodeError) as e:
            fs.mkdir(str(tmp_path / "d"))
        assert e.value.errno == err
