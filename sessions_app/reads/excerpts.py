"""Short excerpts of plan text: the one place every edge cuts text for showing.

- ``one_line``: a text folded to one line and cut to a length at a word boundary (lists,
  tool answers, the admin's columns).
- ``fit_json``: the same, cut so that its JSON encoding takes at most a number of bytes
  (tool answers have a byte budget, and one emoji costs four).
- ``ended``: a text someone wrote, as the end of a sentence of 9plan's (one full stop).
- ``match_pattern`` and ``around_match``: the excerpt of a text around what a history
  search matched, with where each match is, for the admin (which marks them) and the
  REST API (which returns the plain excerpt).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import overload

from sessions_app.search import ACCENTS, ENDINGS, bases, fold, shorter_stems, terms

ELLIPSIS = "…"
# A cut looks this far back for a space, so that it does not end inside a word; a text
# with no space that near (a long URL, say) is cut where it must be.
WORD_SLACK = 20


SENTENCE_ENDS = (".", "!", "?", ELLIPSIS)


def ended(text: str) -> str:
    """``text`` closing a sentence: a full stop after it unless it ends one already, so a
    reason such as "Not needed." is not followed by a second one."""
    text = text.rstrip()
    return text if text.endswith(SENTENCE_ENDS) else f"{text}."


def _squash_space(text: str) -> str:
    return " ".join(text.split())


def _cut_end(text: str, end: int) -> int:
    """``end``, moved back to the space before a word it would cut through."""
    if end >= len(text) or text[end] == " " or text[end - 1] == " ":
        return end
    space = text.rfind(" ", max(0, end - WORD_SLACK), end)
    return space if space > 0 else end


def _cut_start(text: str, start: int) -> int:
    """``start``, moved on past the end of a word it would cut through."""
    if start <= 0 or text[start - 1] == " ":
        return max(start, 0)
    space = text.find(" ", start, start + WORD_SLACK)
    return space + 1 if space != -1 else start


@overload
def one_line(text: str, limit: int) -> str: ...
@overload
def one_line(text: str | None, limit: int) -> str | None: ...
def one_line(text: str | None, limit: int) -> str | None:
    """``text`` on one line, at most ``limit`` characters, cut after a whole word with "…"."""
    if text is None:
        return None
    text = _squash_space(text)
    if len(text) <= limit:
        return text
    return text[: _cut_end(text, limit - 1)].rstrip() + ELLIPSIS


def _json_cost(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode()) - 2


@overload
def fit_json(text: str, max_bytes: int) -> str: ...
@overload
def fit_json(text: str | None, max_bytes: int) -> str | None: ...
def fit_json(text: str | None, max_bytes: int) -> str | None:
    """A one-line excerpt whose JSON string encoding takes at most ``max_bytes`` bytes."""
    if text is None:
        return None
    short = one_line(text, max_bytes)
    if _json_cost(short) <= max_bytes:
        return short
    # The "…" takes 3 bytes for its one character: a cut 2 characters shorter fits
    # whenever the text needs no escapes and is ASCII, as most is.
    text = short
    short = one_line(text, max_bytes - 2)
    if _json_cost(short) <= max_bytes:
        return short
    budget = max_bytes - _json_cost(ELLIPSIS)
    # A prefix's JSON cost grows with its length, so the longest prefix within the budget
    # is found by bisection: a few encodings, not one per character.
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if _json_cost(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return text[: _cut_end(text, low)].rstrip() + ELLIPSIS


# Each letter and the accented letters that fold to it, for patterns that match as the
# engines do ("cafe" marks "café").
_VARIANTS: dict[str, str] = {}
for _accented, _plain in ACCENTS.items():
    _VARIANTS[_plain] = _VARIANTS.get(_plain, _plain) + _accented
_ANY_ENDING = "|".join(sorted(ENDINGS, key=len, reverse=True))


def _letters(word: str) -> str:
    return "".join(f"[{_VARIANTS[c]}]" if c in _VARIANTS else re.escape(c) for c in word)


def _forms(base: str) -> str:
    """``base`` alone or with an ending, its last consonant maybe doubled ("run", "running")."""
    return f"{_letters(base)}(?:{_letters(base[-1])}?(?:{_ANY_ENDING}))?"


def match_pattern(query: str) -> re.Pattern[str] | None:
    """What a history search for ``query`` matches: each word in its forms (the engines
    stem words: "caching" matches "cache" and "cached"), the last also as a prefix, accents
    ignored. The forms are read off the word's ending, as the stemmers do, so this marks
    what the search found near enough, never exactly."""
    found = terms(query)
    if not found:
        return None
    whole = [_forms(base) for word in found for base in bases(word)]
    last = fold(found[-1])
    whole += [_forms(stem) for stem in shorter_stems(last)]
    parts = [rf"\b(?:{'|'.join(whole)})\b", rf"\b{_letters(last)}\w*"]
    return re.compile("|".join(parts), re.IGNORECASE | re.UNICODE)


def has_match(text: str | None, pattern: re.Pattern[str] | None) -> bool:
    return bool(text and pattern and pattern.search(text))


@dataclass(frozen=True)
class Excerpt:
    """A piece of a text: its plain characters, the (start, end) of each match within
    them, and whether text was left out before and after."""

    text: str
    spans: tuple[tuple[int, int], ...]
    cut_before: bool
    cut_after: bool

    def plain(self) -> str:
        return (ELLIPSIS if self.cut_before else "") + self.text + (ELLIPSIS if self.cut_after else "")


def around_match(text: str | None, pattern: re.Pattern[str] | None, limit: int) -> Excerpt:
    """About ``limit`` characters of ``text`` (on one line) starting a little before its
    first match, cut at word boundaries; the start of the text when nothing matches."""
    text = _squash_space(text or "")
    matches = list(pattern.finditer(text)) if pattern else []
    start = 0
    if matches and matches[0].start() > limit // 3:
        start = _cut_start(text, matches[0].start() - limit // 3)
    end = len(text) if start + limit >= len(text) else _cut_end(text, start + limit)
    spans = tuple(
        (max(m.start(), start) - start, min(m.end(), end) - start)
        for m in matches
        if m.end() > start and m.start() < end
    )
    return Excerpt(text[start:end].rstrip(), spans, start > 0, end < len(text))


# The sections a history search looks in, in the order an excerpt prefers them.
SEARCHED = ("goal", "outcome", "context", "inputs", "outputs", "notes")


def first_matching(plan, pattern: re.Pattern[str] | None, names: tuple[str, ...] = SEARCHED) -> str | None:
    """The name of the first of ``names`` whose text in ``plan`` holds a match."""
    return next((name for name in names if has_match(getattr(plan, name), pattern)), None)
