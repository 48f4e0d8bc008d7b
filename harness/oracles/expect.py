"""Expectation comparison: an answer against a step's ``expect``, a sandbox against ``then``,
and the normalisation that makes two implementations' sandboxes comparable.

Pure comparisons on typed scenario values (``harness.gate.scenarios``); the only I/O is reading the
sandbox a ``then`` names (modes, invariants).  Written from SPEC.md like every oracle: the
configuration is compared by value with this wing's own JSONC stripping, never the reference's.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..drivers.sandbox import SNAPSHOT_DIR
from ..gate.scenarios import Expect, Then, content_bytes
from .grammar import strip_jsonc
from .invariants import CHECKS, DEFAULT_CHECKS, check_sandbox
from .shared_checks import outcome_failures, store_failures
from .spec import LOCK_NAME, TEMP_SUFFIX


class Reply(Protocol):
    """A driver's answer as the comparison sees it (``harness.drivers.peers.Answer``)."""

    ok: bool
    result: Any
    error: dict[str, Any] | None


@dataclass
class Failure:
    """One mismatch: where, what was expected, what came, and the first difference."""

    where: str
    expected: str
    actual: str
    detail: str = ""

    def render(self) -> str:
        text = f"  {self.where}: {self.detail or 'differs'}"
        text += f"\n    expected: {self.expected}\n    actual:   {self.actual}"
        return text


def first_difference(expected: bytes, actual: bytes) -> str:
    """The first differing line (1-based) and byte offset, with both sides."""
    limit = min(len(expected), len(actual))
    offset = next((i for i in range(limit) if expected[i] != actual[i]), limit)
    line_no = expected.count(b"\n", 0, offset) + 1
    exp_line = expected.split(b"\n")[line_no - 1] if line_no <= expected.count(b"\n") + 1 else b""
    act_lines = actual.split(b"\n")
    act_line = act_lines[line_no - 1] if line_no <= len(act_lines) else b"<end of file>"
    return (
        f"first difference at byte {offset}, line {line_no}: "
        f"expected {exp_line!r} / actual {act_line!r}"
    )


def show(value: Any) -> str:
    """A value for a failure line, cut at 400 characters."""
    text = repr(value)
    return text if len(text) <= 400 else text[:400] + "…"


def _contains(value: Any, needle: str) -> bool:
    """A needle in a string result, or in any string inside a structured one."""
    if isinstance(value, str):
        return needle in value
    if isinstance(value, dict):
        return any(_contains(v, needle) for v in value.values())
    if isinstance(value, list):
        return any(_contains(v, needle) for v in value)
    return False


def _check_error(where: str, answer: Reply, expect: Expect, strict: bool) -> list[Failure]:
    want = expect.error
    assert want is not None
    if answer.ok:
        return [Failure(where, f"error {_error_spec(expect)}", f"result {show(answer.result)}", "expected an error")]
    got = answer.error or {}
    out: list[Failure] = []
    if want.kind is not None and got.get("kind") != want.kind:
        out.append(Failure(where + " error kind", want.kind, str(got.get("kind"))))
    if want.has_code and got.get("code") != want.code:
        out.append(Failure(where + " error code", str(want.code), str(got.get("code"))))
    if strict and want.message is not None and got.get("message") != want.message:
        out.append(Failure(where + " error message", want.message, str(got.get("message"))))
    if want.message_matches is not None and not re.search(want.message_matches, str(got.get("message", ""))):
        out.append(Failure(where + " error message", "/" + want.message_matches + "/", str(got.get("message"))))
    return out


def _error_spec(expect: Expect) -> dict[str, Any]:
    """The expected error as the scenario wrote it (for the failure text)."""
    want = expect.error
    assert want is not None
    spec: dict[str, Any] = {}
    if want.kind is not None:
        spec["kind"] = want.kind
    if want.has_code:
        spec["code"] = want.code
    if want.message is not None:
        spec["message"] = want.message
    if want.message_matches is not None:
        spec["message_matches"] = want.message_matches
    return spec


def _check_result(where: str, result: Any, expect: Expect) -> list[Failure]:
    out: list[Failure] = []
    if expect.has_result and result != expect.result:
        detail = ""
        if isinstance(expect.result, str) and isinstance(result, str):
            detail = first_difference(
                expect.result.encode("utf-8", "surrogatepass"), result.encode("utf-8", "surrogatepass")
            )
        out.append(Failure(where + " result", show(expect.result), show(result), detail))
    if expect.result_matches is not None and not re.fullmatch(expect.result_matches, str(result), re.S):
        out.append(Failure(where + " result", "/" + expect.result_matches + "/", show(result)))
    for needle in expect.result_contains:
        if not _contains(result, needle):
            out.append(Failure(where + " result", f"contains {needle!r}", show(result)))
    for needle in expect.result_excludes:
        if _contains(result, needle):
            out.append(Failure(where + " result", f"excludes {needle!r}", show(result)))
    return out


def check_answer(
    where: str,
    answer: Reply,
    expect: Expect,
    elapsed: float,
    stderr: Callable[[tuple[str, ...]], str],
    strict: bool,
    impl: str = "",
    op: str = "",
) -> list[Failure]:
    """Every way ``answer`` (after ``elapsed`` s) misses ``expect``; ``stderr(needles)`` gives
    the driver's stderr once it holds the needles (or a bounded wait has passed).  ``impl``
    (the driver's hello name) and ``op`` choose the outcome classifier (shared-store profile)."""
    out = [Failure(*f) for f in outcome_failures(where, impl, op, answer, expect.outcome)]
    if expect.error is not None:
        out += _check_error(where, answer, expect, strict)
        if answer.ok:
            return out
    elif expect.wants_result and not answer.ok:
        return [Failure(where, "a result", f"error {answer.error}", "unexpected error")]
    if answer.ok:
        out += _check_result(where, answer.result, expect)
    if expect.max_seconds is not None and elapsed > expect.max_seconds:
        out.append(Failure(where + " time", f"<= {expect.max_seconds} s", f"{elapsed:.3f} s"))
    if expect.min_seconds is not None and elapsed < expect.min_seconds:
        out.append(Failure(where + " time", f">= {expect.min_seconds} s", f"{elapsed:.3f} s"))
    if expect.stderr_contains:
        text = stderr(expect.stderr_contains)
        for needle in expect.stderr_contains:
            if needle not in text:
                out.append(Failure(where + " stderr", f"contains {needle!r}", show(text)))
    return out


def check_then(then: Then, before: dict[str, bytes], after: dict[str, bytes], root: Path) -> list[Failure]:
    """Every way the sandbox at ``root`` (snapshots ``before``/``after`` the steps) misses ``then``."""
    out: list[Failure] = []
    for rel, content in then.files.items():
        want = content_bytes(content)
        got = after.get(rel)
        if got is None:
            out.append(Failure(f"file {rel}", show(want), "<absent>", "missing"))
        elif got != want:
            out.append(Failure(f"file {rel}", show(want), show(got), first_difference(want, got)))
    for rel, pattern in then.matches.items():
        got = after.get(rel)
        text = got.decode("utf-8", "replace") if got is not None else None
        if text is None or not re.fullmatch(pattern, text, re.S):
            out.append(Failure(f"file {rel}", f"/{pattern}/", show(text)))
    for rel in then.absent:
        if rel in after:
            out.append(Failure(f"file {rel}", "<absent>", show(after[rel]), "must not exist"))
    for rel in then.present:
        if rel not in after:
            out.append(Failure(f"file {rel}", "<present>", "<absent>", "must exist"))
    for rel in then.unchanged:
        if rel == "*":
            if before != after:
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                out.append(Failure("sandbox", "unchanged", ", ".join(changed[:10]), "files changed"))
        elif before.get(rel) != after.get(rel):
            out.append(Failure(f"file {rel}", show(before.get(rel)), show(after.get(rel)), "changed"))
    for d, texts in then.excludes.items():
        prefix = d.rstrip("/") + "/"
        for rel in sorted(k for k in after if k.startswith(prefix)):
            for text in texts:
                if text.encode("utf-8") in after[rel]:
                    out.append(Failure(f"file {rel}", f"no {text!r}", show(after[rel]), "outside text in the store"))
    out += _check_modes(then, root)
    out += [Failure(*f) for f in store_failures(then.store, after)]
    listed = set(then.files) | set(then.present) | set(then.store)
    for d in then.no_other_files:
        prefix = d.rstrip("/") + "/"
        extra = sorted(
            k for k in after if k.startswith(prefix) and "/" not in k[len(prefix):] and k not in listed
        )
        if extra:
            out.append(Failure(f"directory {d}", "only the listed files", ", ".join(extra)))
    if then.invariants:
        names = DEFAULT_CHECKS if then.invariants == "all" else tuple(n for n in then.invariants if n in CHECKS)
        for v in check_sandbox(root, names):
            out.append(Failure(f"invariant {v.clause}", "holds", str(v)))
    return out


def _volatile(rel: str) -> bool:
    """Locks and temporaries: their names vary, and the invariants (S-INV-*) judge them."""
    name = rel.rsplit("/", 1)[-1]
    return name == LOCK_NAME or TEMP_SUFFIX.search(name) is not None


def uncovered(
    then: Then, before: dict[str, bytes], after: dict[str, bytes], harness: dict[str, bytes | None]
) -> list[str]:
    """Files the implementation changed (created, modified, deleted) that ``then`` neither pins
    (``files``, ``matches``, ``absent``, ``unchanged``) nor ignores with a reason.

    ``harness`` maps a path to what the scenario's own file actions last left there (``None``:
    deleted): a file whose final bytes are exactly those was changed by the scenario, not by
    the implementation.  Directories do not count (their files do), nor locks and temporaries.
    """
    if "*" in then.unchanged:
        return []
    pinned = set(then.files) | set(then.matches) | set(then.absent) | set(then.unchanged) | set(then.store)
    out = []
    for rel in sorted(set(before) | set(after)):
        now, was = after.get(rel), before.get(rel)
        if now == was or SNAPSHOT_DIR in (now, was) or _volatile(rel) or rel in pinned:
            continue
        if rel in harness and harness[rel] == now:
            continue
        if any(fnmatch.fnmatchcase(rel, i.path) for i in then.ignore):
            continue
        out.append(rel)
    return out


UNEXPECTED_WRITE = "unexpected-write"


def _head(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")


def coverage_reason(paths: list[str]) -> str:
    """The scenario error for changed files ``then`` leaves out, when the reference changed
    them: the reference defines what a scenario must pin, so the gap is the scenario's."""
    return f"scenario error: {_head(paths)} changed but `then` neither pins nor ignores it"


def unexpected_write(paths: list[str]) -> Failure:
    """Files another implementation changed that the scenario lets no step change: the tool's
    failure, naming them (the corpus runs on the reference, which leaves no such file)."""
    # the place stays ``then`` (where a gap in the scenario is reported too), so the deviation rows
    # that name it keep naming it; the detail says whose the change is
    return Failure("then", "unchanged: the scenario lets no step change them", ", ".join(paths),
                   f"{UNEXPECTED_WRITE}: the implementation changed {_head(paths)}")


def _check_modes(then: Then, root: Path) -> list[Failure]:
    out: list[Failure] = []
    for rel, mode in then.modes.items():
        try:
            got_mode = stat.S_IMODE(os.lstat(root / rel).st_mode)
        except OSError:
            out.append(Failure(f"mode {rel}", mode, "<absent>"))
            continue
        if got_mode != int(mode, 8):
            out.append(Failure(f"mode {rel}", mode, f"0{got_mode:03o}"))
    return out


# --- normalisation, for comparing two implementations ------------------------------------


def _config_values(data: bytes) -> bytes:
    """``memory.jsonc`` compares by parsed values and key order; comment wording is free (S-CFG-3)."""
    try:
        value = json.loads(strip_jsonc(data.decode("utf-8")))
    except ValueError:
        return data
    return json.dumps(value, ensure_ascii=False).encode()


def _placeholders(data: bytes, names: dict[str, str]) -> bytes:
    for key, value in names.items():
        if key != "PID" and value:
            data = data.replace(value.encode(), b"${" + key.encode() + b"}")
    return data


def normalise_files(files: dict[str, bytes], names: dict[str, str]) -> dict[str, bytes]:
    """Make two sandboxes comparable: placeholders for roots, volatile lock/temp names."""
    out = {}
    for rel, data in files.items():
        rel2 = TEMP_SUFFIX.sub(".tmp-*", rel)
        if rel2.endswith("/" + LOCK_NAME) or rel2 == LOCK_NAME:
            data = b"<lock>"
        elif rel2.endswith("memory.jsonc"):
            data = _config_values(data)
        out[rel2] = _placeholders(data, names)
    return out


def normalise_answer(answer: Reply | None, names: dict[str, str]) -> str | None:
    """An answer as comparable text: roots as placeholders, errors by kind and code only."""
    if answer is None:
        return None
    value: Any = {"ok": answer.ok, "result": answer.result}
    if not answer.ok:
        err = answer.error or {}
        value = {"ok": False, "kind": err.get("kind"), "code": err.get("code")}
    text = repr(value)
    for key, v in names.items():
        if key != "PID" and v:
            text = text.replace(v, "${" + key + "}")
    return text
