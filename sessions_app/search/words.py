"""The words of a query and their forms, the same on both databases: a query is split into
words (never passed to the engine's query language), repeated words counted once and at most
``MAX_TERMS`` of them kept; the stems and shorter stems a word may match, and accents folded
("cafe" finds "café")."""

from __future__ import annotations

import re
import unicodedata

WORD_RE = re.compile(r"\w+", re.UNICODE)
# Words past this many (after repeats are dropped) are ignored: each word is a term the
# engine must look up, and a query that names sixteen things has said what it wants.
MAX_TERMS = 16

# Endings an English stemmer takes off a word (Porter's on SQLite, Snowball's on
# PostgreSQL), alone or one after the other. A word typed in part may run past its stem
# ("configura" for "configuration", stored as "configur"); a shorter stem stands in for
# it only when what the word adds to that stem starts one of these endings, so that
# "configura" finds "configure" but not "config". The highlighter reads the same list
# to mark the forms a word matched.
ENDINGS = (
    "s",
    "es",
    "ies",
    "ied",
    "ed",
    "eed",
    "ing",
    "ings",
    "e",
    "er",
    "ers",
    "y",
    "ly",
    "ily",
    "ion",
    "ions",
    "ional",
    "ionally",
    "ation",
    "ations",
    "ational",
    "ate",
    "ated",
    "ates",
    "ating",
    "ator",
    "ators",
    "ative",
    "ment",
    "ments",
    "ement",
    "al",
    "ally",
    "alism",
    "ality",
    "alize",
    "alized",
    "alization",
    "ize",
    "ized",
    "izes",
    "izing",
    "izer",
    "izers",
    "ization",
    "izations",
    "ity",
    "ities",
    "ive",
    "ively",
    "iveness",
    "ivity",
    "ness",
    "ful",
    "fully",
    "fulness",
    "able",
    "ably",
    "ability",
    "ible",
    "ibly",
    "ibility",
    "ance",
    "ances",
    "ence",
    "ences",
    "ency",
    "ant",
    "ants",
    "ent",
    "ently",
    "ic",
    "ical",
    "ically",
    "icate",
    "icity",
    "ism",
    "isms",
    "ous",
    "ously",
    "ousness",
)
_ENDING_PREFIXES = frozenset(e[:i] for e in ENDINGS for i in range(1, len(e) + 1))
_LONGEST_ENDING = max(map(len, ENDINGS))
# A word is never cut shorter than this: too many words begin with two letters.
MIN_STEM = 3
# A shorter stem standing in for a word typed in part is at least this long: three letters
# left of a long word are a stem of too many other words ("rel" of "relati").
MIN_SHORTER_STEM = 4


def _accent_table() -> dict[str, str]:
    """Each Latin letter with diacritics and the letter it folds to: the letters FTS5's
    ``remove_diacritics 2`` folds (migration 0006 writes the same table out for PostgreSQL)."""
    table = {"ſ": "s", "ẛ": "s"}
    for code in [*range(0xC0, 0x250), *range(0x1E00, 0x1F00)]:
        parts = unicodedata.normalize("NFD", chr(code))
        base = parts[0]
        if len(parts) > 1 and base.isascii() and base.isalpha() and all(map(unicodedata.combining, parts[1:])):
            table[chr(code)] = base
    return table


ACCENTS = _accent_table()
_FOLD = str.maketrans(ACCENTS)


def fold(text: str) -> str:
    """``text`` with the accents both engines ignore taken off ("Café" -> "Cafe")."""
    return text.translate(_FOLD)


def words(query: str) -> list[str]:
    # "_" counts as a letter for \w but separates words in both engines: a run of
    # underscores alone is no word (FTS5 would read it as an empty phrase that matches
    # nothing, PostgreSQL would drop it: the two would disagree).
    return [w for w in WORD_RE.findall(query.lower()) if w.strip("_")]


def terms(query: str) -> list[str]:
    """The words a search looks for: each once, at most ``MAX_TERMS``, in the order typed,
    and the query's last word last (it is the one read as a prefix)."""
    found = words(query)
    if not found:
        return []
    last = found[-1]
    before = list(dict.fromkeys(w for w in found[:-1] if w != last))
    return before[: MAX_TERMS - 1] + [last]


def _ending_of(word: str) -> str:
    """The longest of ENDINGS that ``word`` ends with and can lose, or ""."""
    return max(
        (e for e in ENDINGS if word.endswith(e) and len(word) - len(e) >= MIN_STEM),
        key=len,
        default="",
    )


def bases(word: str) -> list[str]:
    """``word`` and what is left of it without an ending (its stem, near enough), with a
    doubled last consonant undone ("running" -> "runn", "run")."""
    word = fold(word)
    found = [word]
    for ending in ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_STEM:
            base = word[: -len(ending)]
            found.append(base)
            if len(base) > MIN_STEM and base[-1] == base[-2] and base[-1] not in "aeiou":
                found.append(base[:-1])
            if base.endswith("i"):
                found.append(base[:-1] + "y")
    return list(dict.fromkeys(found))


def shorter_stems(word: str) -> list[str]:
    """The stems shorter than a word typed in part that a word it begins may be stored as:
    "configura" -> ["configur"] (as "configuration" is). Only stems shorter than the
    engine's own stem of ``word`` are given, as that one its prefix search finds already."""
    word = fold(word)
    own = len(word) - len(_ending_of(word))
    found = []
    for k in range(max(MIN_SHORTER_STEM, len(word) - _LONGEST_ENDING - 1), own):
        stem, tail = word[:k], word[k:]
        doubled = tail[0] == stem[-1] and stem[-1] not in "aeiou" and (len(tail) == 1 or tail[1:] in _ENDING_PREFIXES)
        if tail in _ENDING_PREFIXES or doubled:
            found.append(stem)
    return found
