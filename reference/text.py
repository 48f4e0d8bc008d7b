"""ECMAScript string and number semantics in Python (S-FMT-1, S-FMT-2, S-FMT-16..18).

The JS core works on UTF-16 strings with ECMAScript's whitespace set, regex flavour and
number printing.  Python's defaults differ on almost every point, so every text decision in
the reference goes through the helpers here instead of ``str.strip``/``re``/``json`` defaults.
``JSON.parse`` and the JSON form of answers live in ``reference.jsjson``.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Final


class _Undefined:
    """The JS ``undefined`` value: a key that is absent, as opposed to ``null`` (None)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Final = _Undefined()

# S-FMT-2: exactly ECMAScript's WhiteSpace + LineTerminator set.
WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
WS_CLASS: Final = (
    "[\\t\\n\\x0b\\x0c\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"
)
LINE_TERMINATORS: Final = "\n\r\u2028\u2029"
# A multi-line ``^`` position: start of text or just after one of the four terminators.
LINE_START: Final = "(?:(?<=[\\n\\r\\u2028\\u2029])|(?<![\\s\\S]))"

_WS_RUN = re.compile(WS_CLASS + "+")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def trim(s: str) -> str:
    """ECMAScript ``String.prototype.trim``."""
    return s.strip(WHITESPACE)


def trim_start(s: str) -> str:
    return s.lstrip(WHITESPACE)


def trim_end(s: str) -> str:
    return s.rstrip(WHITESPACE)


def collapse_whitespace(s: str) -> str:
    """Replace every whitespace run by one space (JS ``s.replace(/\\s+/g, ' ')``)."""
    return _WS_RUN.sub(" ", s)


def is_whitespace(ch: str) -> bool:
    return ch != "" and ch in WHITESPACE


# --- UTF-16 code units (S-FMT-17) -------------------------------------------------------


def join_surrogates(s: str) -> str:
    """Merge adjacent surrogate halves into one code point, as a JS string would read them."""
    if not _LONE_SURROGATE.search(s):
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def utf16_slice(s: str, start: int, end: int | None = None) -> str:
    """``s.slice(start, end)`` counted in UTF-16 code units (non-negative bounds)."""
    if s.isascii():
        return s[start:end]
    units = s.encode("utf-16-le", "surrogatepass")
    cut = units[2 * start : None if end is None else 2 * end]
    return cut.decode("utf-16-le", "surrogatepass")


def encode_utf8(s: str) -> bytes:
    """UTF-8 as Node writes it: an unpaired surrogate becomes U+FFFD (S-FMT-1)."""
    if s.isascii():
        return s.encode("ascii")
    return _LONE_SURROGATE.sub("\ufffd", join_surrogates(s)).encode("utf-8")


def decode_utf8(b: bytes) -> str:
    """One U+FFFD per maximal ill-formed subsequence; a BOM is kept (S-FMT-17)."""
    return b.decode("utf-8", "replace")


def utf8_len(s: str) -> int:
    return len(encode_utf8(s))


_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")


def _split_astral(m: re.Match[str]) -> str:
    cp = ord(m.group()) - 0x10000
    return chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))


def to_code_units(s: str) -> str:
    """``s`` with every astral character split into its two surrogates (one char per unit)."""
    return _ASTRAL.sub(_split_astral, s)


# --- case and regex semantics ------------------------------------------------------------

# Letters that Unicode 15-17 (Node 20 / ICU 78) lowercases but Python 3.11's Unicode 14 does
# not (S-FMT-17).  Ranges of upper/lower pairs: (first upper, last upper, delta).
_NEW_LOWERCASE_PAIRS: Final = (
    (0x1C89, 0x1C89, 1),
    (0x10D50, 0x10D65, 0x20),
    (0x16EA0, 0x16EB8, 0x1B),
)
_NEW_LOWERCASE_SINGLE: Final = {
    0xA7CB: 0x0264,
    0xA7CC: 0xA7CD,
    0xA7CE: 0xA7CF,
    0xA7D2: 0xA7D3,
    0xA7D4: 0xA7D5,
    0xA7DA: 0xA7DB,
    0xA7DC: 0x019B,
}


def _lower_table() -> dict[int, int]:
    table: dict[int, int] = dict(_NEW_LOWERCASE_SINGLE)
    for first, last, delta in _NEW_LOWERCASE_PAIRS:
        for cp in range(first, last + 1):
            if chr(cp).lower() == chr(cp):
                table[cp] = cp + delta
    return {k: v for k, v in table.items() if chr(k).lower() == chr(k)}


_LOWER_EXTRA: Final = _lower_table()


# Cased letters Python's Unicode 14 does not know as cased: both forms of every gap letter.
_NEW_CASED: Final = frozenset(chr(c) for pair in _LOWER_EXTRA.items() for c in pair)
# Word_Break MidLetter / MidNumLet / Single_Quote: case-ignorable beside Mn, Me, Cf, Lm, Sk.
_IGNORABLE_PUNCT: Final = frozenset("'.:\u00b7\u0387\u055f\u05f4\u2018\u2019\u2024\u2027\ufe13\ufe52\ufe55\uff07\uff0e\uff1a")


def _is_cased(ch: str) -> bool:
    return ch in _NEW_CASED or unicodedata.category(ch) in ("Lu", "Ll", "Lt") or ch.lower() != ch.upper()


def _is_case_ignorable(ch: str) -> bool:
    return ch in _IGNORABLE_PUNCT or unicodedata.category(ch) in ("Mn", "Me", "Cf", "Lm", "Sk")


def _final_sigma(s: str, i: int) -> bool:
    """Unicode's Final_Sigma context for s[i], with the gap letters counted as cased."""
    j = i - 1
    while j >= 0 and _is_case_ignorable(s[j]):
        j -= 1
    if j < 0 or not _is_cased(s[j]):
        return False
    k = i + 1
    while k < len(s) and _is_case_ignorable(s[k]):
        k += 1
    return k >= len(s) or not _is_cased(s[k])


def js_lower(s: str) -> str:
    """ECMAScript ``toLowerCase`` (full mapping, final sigma); never ``casefold``.

    Python 3.11 knows Unicode 14: the ~55 newer letters are mapped by a table, and where one
    stands beside a capital sigma, Final_Sigma is decided here with those letters as cased.
    """
    if s.isascii():
        return s.lower()
    s = join_surrogates(s)
    if "\u03a3" in s and not _NEW_CASED.isdisjoint(s):
        return "".join(
            ("\u03c2" if _final_sigma(s, i) else "\u03c3") if ch == "\u03a3" else ch.lower()
            for i, ch in enumerate(s)
        ).translate(_LOWER_EXTRA)
    return s.lower().translate(_LOWER_EXTRA) if _LOWER_EXTRA else s.lower()


# --- numbers (S-FMT-18) ------------------------------------------------------------------


def number_to_string(x: float) -> str:
    """ECMAScript Number::toString(10)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    if x < 0:
        return "-" + number_to_string(-x)
    mantissa, _, exp_text = repr(float(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    raw = whole + frac
    n = len(whole) + (int(exp_text) if exp_text else 0)  # value = 0.raw * 10**n
    digits = raw.lstrip("0")
    n -= len(raw) - len(digits)
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    head = digits[0] if k == 1 else digits[0] + "." + digits[1:]
    return f"{head}e{sign}{abs(e)}"


def to_number(value: object) -> float:
    """ECMAScript ToNumber for JSON-representable values."""
    if value is None:
        return 0.0
    if value is UNDEFINED:
        return math.nan
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        t = trim(value)
        if t == "":
            return 0.0
        if re.fullmatch(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)", t, re.ASCII):
            return float(t.replace("Infinity", "inf"))
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", t):
            return float(int(t, 0))
        return math.nan
    if isinstance(value, list):
        return to_number(to_string(value))
    return math.nan


def to_integer_or_infinity(value: object) -> float:
    n = to_number(value)
    if math.isnan(n):
        return 0.0
    if math.isinf(n):
        return n
    return float(math.trunc(n))


def js_slice(seq: Sequence[str], start: object, end: object = UNDEFINED) -> list[str]:
    """``Array.prototype.slice`` with ECMAScript argument conversion."""
    length = len(seq)

    def clamp(rel: float) -> int:
        if rel < 0:
            return int(max(length + rel, 0))
        return int(min(rel, length))

    lo = clamp(to_integer_or_infinity(start))
    hi = length if end is UNDEFINED else clamp(to_integer_or_infinity(end))
    return list(seq[lo:hi]) if lo < hi else []


def parse_int(s: str) -> float:
    """ECMAScript ``parseInt(s, 10)`` (S-LOCK-3)."""
    m = re.match(r"([+-]?)([0-9]+)", trim_start(s))
    if m is None:
        return math.nan
    try:
        value = float(int(m.group(2)))
    except OverflowError:
        value = math.inf
    return -value if m.group(1) == "-" else value


def is_js_number(value: object) -> bool:
    """A JSON number, never a boolean (``bool`` is an ``int`` in Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- ToString and JSON (S-FMT-1, S-FMT-18) --------------------------------------------


def to_string(value: object) -> str:
    """ECMAScript ToString for JSON-representable values (plus UNDEFINED)."""
    if isinstance(value, str):
        return value
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return number_to_string(float(value))
    if isinstance(value, list | tuple):
        return ",".join("" if v is None or v is UNDEFINED else to_string(v) for v in value)
    return "[object Object]"


def is_truthy(value: object) -> bool:
    if value is None or value is UNDEFINED or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and not math.isnan(value)
    if isinstance(value, str):
        return value != ""
    return True


def json_string(s: str) -> str:
    """``JSON.stringify(s)`` for a string: lone surrogates become lowercase ``\\udxxx``."""
    text = json.dumps(join_surrogates(s), ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def replace_first_with_patterns(text: str, search: str, replacement: str) -> str:
    """``text.replace(search, replacement)`` with a string search: ``$`` patterns expand.

    ``$$`` → ``$``, ``$&`` → the match, ``$``` → text before it, ``$'`` → text after it; any
    other ``$`` stays literal (S-MIGRATE-3 step 5).
    """
    at = text.find(search)
    if at < 0:
        return text
    before, after = text[:at], text[at + len(search) :]
    out: list[str] = []
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        nxt = replacement[i + 1] if i + 1 < len(replacement) else ""
        if ch == "$" and nxt in ("$", "&", "`", "'"):
            out.append({"$": "$", "&": search, "`": before, "'": after}[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return before + "".join(out) + after
