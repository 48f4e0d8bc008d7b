"""ECMAScript ``JSON.parse`` and ``JSON.stringify`` number printing, as V8 (Node 20) does them.

The store parses JSON in two places (``memory.jsonc``, front matter) and the protocol server
prints every answer as JSON; V8's error messages are observable (S-ERR-7), so the parser
follows V8's scan order.  Split from ``reference.text`` (string semantics) to keep each
module readable; the string helpers it needs come from there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final

from .text import UNDEFINED, join_surrogates, number_to_string, to_code_units


class JsonSyntaxError(ValueError):
    """V8's ``SyntaxError`` from ``JSON.parse``, with V8's (Node 20) message text."""

    kind = "SyntaxError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _reject_constant(name: str) -> float:
    raise JsonSyntaxError(name)  # replaced by V8's message in ``json_parse``


def json_parse(text: str) -> object:
    """ECMAScript ``JSON.parse``: no NaN/Infinity literals, every number a double.

    ``json.loads`` accepts exactly the JSON grammar once the constants are rejected, so it is
    the fast path; on any failure (or nesting too deep for its recursion) the V8-faithful
    parser below decides, yielding either the value or V8's error message.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=float)
    except (ValueError, RecursionError):
        return _V8JsonParser(text).parse()




_JSON_ESCAPES: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_DIGITS: Final = frozenset("0123456789")
_NUMBER_PART: Final = frozenset("0123456789.eE-+")
_SPECIAL_SOURCES: Final = frozenset(("[object Object]", "undefined", "Infinity", "NaN"))
_CONTEXT: Final = 10  # V8 kMaxContextCharacters; context shown when the source has >= 21 units


class _V8JsonParser:
    """V8's ``JsonParser`` (Node 20): the same scan order, hence the same error and position.

    Works on UTF-16 code units, iteratively (no depth limit), as V8 does.
    """

    def __init__(self, text: str) -> None:
        self.src = to_code_units(text)
        self.n = len(self.src)
        self.i = 0

    # --- errors -------------------------------------------------------------------------

    def _fail(self, what: str) -> JsonSyntaxError:
        return JsonSyntaxError(f"{what} in JSON at position {self.i}")

    def _unexpected(self) -> JsonSyntaxError:
        """``ReportUnexpectedCharacter(CurrentCharacter())``."""
        if self.i >= self.n:
            return JsonSyntaxError("Unexpected end of JSON input")
        c = self.src[self.i]
        if c in _DIGITS or c == "-":
            return self._fail("Unexpected number")
        if c == '"':
            return self._fail("Unexpected string")
        if self.src in _SPECIAL_SOURCES:
            return JsonSyntaxError(f'"{self.src}" is not valid JSON')
        pos, n = self.i, self.n
        if n < 2 * _CONTEXT + 1:
            text = f"Unexpected token '{c}', \"{self.src}\" is not valid JSON"
        elif pos < _CONTEXT:
            text = f"Unexpected token '{c}', \"{self.src[: pos + _CONTEXT]}\"... is not valid JSON"
        elif pos < n - _CONTEXT:
            ctx = self.src[pos - _CONTEXT : pos + _CONTEXT]
            text = f"Unexpected token '{c}', ...\"{ctx}\"... is not valid JSON"
        else:
            text = f"Unexpected token '{c}', ...\"{self.src[pos - _CONTEXT :]}\" is not valid JSON"
        return JsonSyntaxError(join_surrogates(text))

    # --- scanning -----------------------------------------------------------------------

    def _cur(self) -> str:
        return self.src[self.i] if self.i < self.n else ""

    def _skip_ws(self) -> str:
        while self.i < self.n and self.src[self.i] in " \t\n\r":
            self.i += 1
        return self._cur()

    def _literal(self, word: str, value: object) -> object:
        src, i = self.src, self.i
        if src.startswith(word, i):
            self.i = i + len(word)
            return value
        self.i += 1
        for k in range(1, min(len(word), self.n - i)):
            if src[self.i] != word[k]:
                raise self._unexpected()
            self.i += 1
        raise JsonSyntaxError("Unexpected end of JSON input")

    def _number(self) -> float:
        start = self.i
        if self._cur() == "-":
            self.i += 1
        if self._cur() == "0":
            self.i += 1
            if self._cur() in _DIGITS:
                raise self._fail("Unexpected number")
        else:
            first = self.i
            while self._cur() in _DIGITS:
                self.i += 1
            if self.i == first:
                raise self._fail("No number after minus sign")
        if self._cur() == ".":
            self.i += 1
            if self._cur() not in _DIGITS:
                raise self._fail("Unterminated fractional number")
            while self._cur() in _DIGITS:
                self.i += 1
        if self._cur() in ("e", "E"):
            self.i += 1
            if self._cur() in ("-", "+"):
                self.i += 1
            if self._cur() not in _DIGITS:
                raise self._fail("Exponent part is missing a number")
            while self._cur() in _DIGITS:
                self.i += 1
        return float(self.src[start : self.i])

    def _string(self) -> str:
        """Scan from just after the opening quote through the closing quote."""
        out: list[str] = []
        src, n = self.src, self.n
        while True:
            start = self.i
            while self.i < n and src[self.i] not in '"\\' and src[self.i] >= " ":
                self.i += 1
            out.append(src[start : self.i])
            if self.i >= n:
                raise self._fail("Unterminated string")
            c = src[self.i]
            if c == '"':
                self.i += 1
                return join_surrogates("".join(out))
            if c != "\\":
                raise self._fail("Bad control character in string literal")
            self.i += 1
            e = self._cur()
            if e == "" or ord(e) > 0xFF:
                raise self._unexpected()
            if e in _JSON_ESCAPES:
                out.append(_JSON_ESCAPES[e])
            elif e == "u":
                for _ in range(4):
                    self.i += 1
                    if self._cur() not in _HEX:
                        raise self._fail("Bad Unicode escape")
                out.append(chr(int(src[self.i - 3 : self.i + 1], 16)))
            else:
                raise self._fail("Bad escaped character")
            self.i += 1

    def _key(self, first: bool) -> str:
        """A property name and its colon; V8 words a missing colon only for the first one."""
        if self._skip_ws() != '"':
            raise self._fail(
                "Expected property name or '}'" if first else "Expected double-quoted property name"
            )
        self.i += 1
        key = self._string()
        if self._skip_ws() != ":":
            raise self._fail("Expected ':' after property name") if first else self._unexpected()
        self.i += 1
        return key

    # --- values -------------------------------------------------------------------------

    def parse(self) -> object:
        # Open containers: [dict, pending key] for objects, [list] for arrays.
        stack: list[list[Any]] = []
        while True:
            c = self._skip_ws()
            value: object
            if c == '"':
                self.i += 1
                value = self._string()
            elif c == "-" or c in _DIGITS:
                value = self._number()
            elif c == "{":
                self.i += 1
                if self._skip_ws() == "}":
                    self.i += 1
                    value = {}
                else:
                    stack.append([{}, self._key(first=True)])
                    continue
            elif c == "[":
                self.i += 1
                if self._skip_ws() == "]":
                    self.i += 1
                    value = []
                else:
                    stack.append([[]])
                    continue
            elif c == "t":
                value = self._literal("true", True)
            elif c == "f":
                value = self._literal("false", False)
            elif c == "n":
                value = self._literal("null", None)
            else:
                raise self._unexpected()
            while True:
                if not stack:
                    if self._skip_ws() != "":
                        raise JsonSyntaxError(
                            f"Unexpected non-whitespace character after JSON at position {self.i}"
                        )
                    return value
                top = stack[-1]
                if isinstance(top[0], dict):
                    top[0][top[1]] = value
                    if self._skip_ws() == ",":
                        self.i += 1
                        top[1] = self._key(first=False)
                        break
                    if self._cur() != "}":
                        raise self._fail("Expected ',' or '}' after property value")
                else:
                    top[0].append(value)
                    if self._skip_ws() == ",":
                        self.i += 1
                        break
                    if self._cur() != "]":
                        raise self._fail("Expected ',' or ']' after array element")
                self.i += 1
                value = stack.pop()[0]


def to_js_json(value: object) -> object:
    """Make a value print as ``JSON.stringify`` would: integral doubles as integers, ±∞ as null."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return None
        if value.is_integer() and abs(value) < 1e21:
            # JS prints the shortest digits padded with zeros (12345678901234567000), not the
            # double's exact value (…168); that decimal integer reads back as the same double.
            return int(number_to_string(value))
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_js_json(v) for k, v in value.items() if v is not UNDEFINED}
    if isinstance(value, list | tuple):
        return [None if v is UNDEFINED else to_js_json(v) for v in value]
    if value is UNDEFINED:
        return None
    return value
