"""The write kit the services share (services/writing.py): how an appended fragment joins
the Notes already stored."""

from __future__ import annotations

import pytest

from sessions_app.services import compose_append


@pytest.mark.parametrize(
    "stored, fragment, expected",
    [
        # S'.rstrip() + "\n\n" + F'
        ("previous", "next", "previous\n\nnext"),
        # trailing whitespace of S goes, Unicode whitespace included
        ("previous \t\n\n\u00a0\u3000", "next", "previous\n\nnext"),
        # leading whitespace-only lines of F go; the first real line keeps its indent
        ("previous", " \n\t\n\r\n    indented code\nnext", "previous\n\n    indented code\nnext"),
        ("previous", "\u00a0\u3000\n## Heading", "previous\n\n## Heading"),
        ("previous", "\u00a0 - item", "previous\n\n\u00a0 - item"),
        # trailing characters of F are kept exactly
        ("previous", "ends without newline", "previous\n\nends without newline"),
        ("previous", "ends with blank lines\n\n\n", "previous\n\nends with blank lines\n\n\n"),
        ("previous", "trailing spaces   ", "previous\n\ntrailing spaces   "),
        # interior of both bodies untouched
        ("a  \n\n\n  b", "c\n\n\n   d\r\ne", "a  \n\n\n  b\n\nc\n\n\n   d\r\ne"),
        ("crlf\r\n", "\r\nx", "crlf\n\nx"),
        # a line ends at "\n" only: NEL and U+2028 are text on the first real line
        ("previous", "\u2028x", "previous\n\n\u2028x"),
        ("previous", "\x85x\u2028y", "previous\n\n\x85x\u2028y"),
        # an empty S' gives F'
        ("", "first", "first"),
        (" \n\t\u00a0", "\n  first", "  first"),
    ],
)
def test_compose_append(stored, fragment, expected):
    assert compose_append(stored, fragment) == expected
