"""A JSON document read piece by piece from a file, with bounds a hostile document cannot pass.

The import reads an export document that may be hundreds of megabytes: it walks the
document's outer structure (the document object, the arrays of plans and events, each
plan's keys and its revisions) one token at a time, and decodes each piece inside it (a
field's value, a revision, an event) whole with the standard library's decoder, which
does that part in C. Only the piece being read and a buffer are in memory at any time.

Every piece is bounded: its length (``max_chars``), how deeply it nests (``max_depth``),
and how many digits a number has (``MAX_DIGITS``); a NaN or infinite number is refused. A
document that breaks a bound, is not UTF-8 or not JSON raises ``Unreadable``, never a
``RecursionError`` or a ``ValueError`` from deep inside the decoder.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Iterator
from typing import BinaryIO

CHUNK = 1 << 20  # bytes read at a time
MAX_DEPTH = 32  # arrays and objects inside one another, within one piece
# Enough for any 64-bit integer (the largest numbers an export holds), with its sign.
MAX_DIGITS = 20
_SPACE = re.compile(r"[ \t\n\r]*")
# A token cut by the buffer's end ("fals", "1e", "\\u00") fails this close to the end.
_LONGEST_TOKEN = 8


TOO_LONG = object()  # what value_within returns for a value over its limit


class Unreadable(Exception):
    """The document cannot be read: not UTF-8, not JSON, or over a bound. ``where`` is
    the line and column the reader had reached."""

    def __init__(self, message: str, where: str = ""):
        super().__init__(message)
        self.message = message
        self.where = where


class _NumberTooLong(Exception):
    pass


def _integer(text: str) -> int:
    # int() of 100,000 digits is slow and then refused anyway (sys.get_int_max_str_digits).
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _NumberTooLong(f"a number of more than {MAX_DIGITS} digits")
    return int(text)


def _real(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NumberTooLong(f"the number {text[:20]}{'…' if len(text) > 20 else ''}, too large to hold")
    return value


def _constant(name: str):
    raise _NumberTooLong(f"{name}, which is not a JSON number")


_DECODER = json.JSONDecoder(parse_int=_integer, parse_float=_real, parse_constant=_constant, strict=True)


def depth(value: object) -> int:
    """How deeply ``value`` nests (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in item if isinstance(child, (dict, list)))
    return deepest


class DocumentReader:
    """Tokens and pieces of the JSON document in ``stream`` (binary), front to back."""

    def __init__(self, stream: BinaryIO, *, max_chars: int, max_depth: int = MAX_DEPTH):
        self._stream = stream
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._read_bytes = 0
        # Where the dropped text ended: lines before the buffer, and the length of its last line.
        self._lines = 0
        self._column = 0
        self.max_chars = max_chars
        self.max_depth = max_depth

    # --- the buffer ---------------------------------------------------------------------

    def _more(self, wanted: int = CHUNK) -> bool:
        """Reads at least ``wanted`` more bytes (fewer at the end); False at the end."""
        if self._eof:
            return False
        if self._pos:
            dropped = self._buf[: self._pos]
            newlines = dropped.count("\n")
            self._column = len(dropped) - dropped.rfind("\n") - 1 if newlines else self._column + len(dropped)
            self._lines += newlines
            self._buf, self._pos = self._buf[self._pos :], 0
        data = self._stream.read(max(wanted, CHUNK))
        try:
            text = self._utf8.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise Unreadable(f"is not UTF-8 text (at byte {self._read_bytes + exc.start:,})", self.where()) from None
        self._read_bytes += len(data)
        if not data:
            self._eof = True
        self._buf += text
        return bool(data)

    def where(self, pos: int | None = None) -> str:
        pos = self._pos if pos is None else pos
        before = self._buf[:pos]
        newlines = before.count("\n")
        column = pos - before.rfind("\n") if newlines else self._column + pos + 1
        return f"line {self._lines + newlines + 1:,}, column {column:,}"

    def _fail(self, message: str, pos: int | None = None) -> Unreadable:
        return Unreadable(message, self.where(pos))

    def peek(self) -> str:
        """The next character that is not white space ("" at the end), not consumed."""
        while True:
            space = _SPACE.match(self._buf, self._pos)
            assert space is not None  # it matches the empty string too
            self._pos = space.end()
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._more():
                return ""

    def _take(self, char: str, what: str) -> None:
        found = self.peek()
        if found != char:
            shown = repr(found) if found else "the end of the document"
            raise self._fail(f"is not JSON: expected {what}, found {shown}")
        self._pos += 1

    # --- pieces ---------------------------------------------------------------------------

    def value(self) -> object:
        """The next whole value, decoded (within the bounds)."""
        return self._decode(self.max_chars, fits=False)

    def value_within(self, limit: int) -> object:
        """The next value if its text is at most ``limit`` characters; otherwise TOO_LONG,
        and nothing is consumed (the caller reads it in parts: ``keys()``, ``items()``)."""
        return self._decode(limit, fits=True)

    def _decode(self, limit: int, *, fits: bool) -> object:
        self.peek()
        while True:
            start = self._pos
            try:
                value, end = _DECODER.raw_decode(self._buf, start)
            except json.JSONDecodeError as exc:
                # A value cut off by the buffer's end fails there, or as a string left open:
                # read on, up to the bound. Any other error is the document's.
                cut = exc.pos >= len(self._buf) - _LONGEST_TOKEN or exc.msg.startswith("Unterminated string")
                if cut and fits and len(self._buf) - start > limit:
                    return TOO_LONG
                if cut and self._grow(start, limit):
                    continue
                raise self._fail(f"is not JSON: {exc.msg}", exc.pos) from None
            except RecursionError:
                raise self._fail(f"nests arrays or objects more than {self.max_depth} deep") from None
            except _NumberTooLong as exc:
                raise self._fail(f"holds {exc}") from None
            # A number that ends with the buffer may go on in the next chunk.
            if end == len(self._buf) and not (fits and end - start > limit) and self._grow(start, limit):
                continue
            break
        if end - start > limit:
            if fits:
                return TOO_LONG
            raise self._fail(f"holds a value of more than {limit:,} characters")
        # Fewer brackets than the bound cannot nest past it (counting them costs far less).
        brackets = self._buf.count("[", start, end) + self._buf.count("{", start, end)
        if brackets > self.max_depth and depth(value) > self.max_depth:
            raise self._fail(f"nests arrays or objects more than {self.max_depth} deep")
        self._pos = end
        return value

    def _grow(self, start: int, limit: int) -> bool:
        """Reads on when the piece starting at ``start`` may not be whole yet; False when
        the document ended. A piece already over ``limit`` is refused."""
        held = len(self._buf) - start
        if held > limit:
            raise self._fail(f"holds a value of more than {limit:,} characters")
        # Doubling: a long piece is decoded a few times, not once per chunk.
        return self._more(held)

    def key(self) -> str:
        """The next object key (a string), then its colon."""
        if self.peek() != '"':
            raise self._fail("is not JSON: expected a key in double quotes")
        key = self.value()
        self._take(":", "':' after a key")
        return key  # type: ignore[return-value]

    # --- structure ------------------------------------------------------------------------

    def keys(self) -> Iterator[str]:
        """The keys of the object that comes next, each before its value (which the caller
        reads: ``value()``, ``keys()`` or ``items()``). A key given twice is refused."""
        self._take("{", "an object")
        seen: set[str] = set()
        if self.peek() == "}":
            self._pos += 1
            return
        while True:
            key = self.key()
            if key in seen:
                raise self._fail(f"gives the key {key!r} twice in one object")
            seen.add(key)
            yield key
            if self.peek() == ",":
                self._pos += 1
                continue
            self._take("}", "',' or '}' after a value")
            return

    def items(self) -> Iterator[int]:
        """The indexes of the array that comes next, each before its element (which the
        caller reads)."""
        self._take("[", "an array")
        if self.peek() == "]":
            self._pos += 1
            return
        index = 0
        while True:
            yield index
            index += 1
            if self.peek() == ",":
                self._pos += 1
                continue
            self._take("]", "',' or ']' after an element")
            return

    def skip(self, level: int = 0) -> None:
        """Passes over the next value however long it is, reading it in parts."""
        if level > self.max_depth:
            raise self._fail(f"nests arrays or objects more than {self.max_depth} deep")
        if self.value_within(self.max_chars) is not TOO_LONG:
            return
        parts = {"[": self.items, "{": self.keys}.get(self.peek())
        if parts is None:
            self.value()  # one string or number over the bound: refused
            return
        for _ in parts():
            self.skip(level + 1)

    def end(self) -> None:
        """Nothing but white space may follow the document."""
        if self.peek() != "":
            raise self._fail("is not JSON: more text follows the document")
