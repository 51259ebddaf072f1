"""A plan file's text: the seven sections rendered under their headings, parsed back without
losing a character, and merged when the file and the database both changed since the file
was written (docs/design.md, "Plan files")."""

from __future__ import annotations

from dataclasses import dataclass, field

from sessions_app.models import SECTION_TITLES, SECTIONS

HEADINGS = {f"# {title}": name for name, title in SECTION_TITLES.items()}


def _heading_like(line: str) -> bool:
    """A heading, or a heading behind any number of escaping backslashes."""
    return line.lstrip("\\").rstrip() in HEADINGS


def _escape(body: str) -> str:
    # A body line that reads as a heading ("# Goal" in an agent's Notes) would start a
    # section when read back and move or drop the agent's text. It gets one more leading
    # backslash on the way out and loses one on the way in, so any text survives.
    if "# " not in body:
        return body
    return "\n".join("\\" + line if _heading_like(line) else line for line in body.split("\n"))


def render(sections: dict[str, str], *, every: bool = True, preamble: str = "") -> str:
    """The file's text: each section under its heading, in order; with ``every=False`` only
    the sections ``sections`` holds (a parsed file's, whose missing headings stay missing),
    and ``preamble`` above the first heading."""
    parts = [preamble] if preamble else []
    for name in SECTIONS:
        if not every and name not in sections:
            continue
        body = _escape((sections.get(name) or "").strip("\r\n"))
        parts.append(f"# {SECTION_TITLES[name]}\n{body}\n" if body else f"# {SECTION_TITLES[name]}\n")
    return "\n".join(parts)


@dataclass
class ParsedFile:
    sections: dict[str, str] = field(default_factory=dict)
    # Text above the first heading: not part of any section, but an agent wrote it.
    preamble: str = ""


def parse(text: str) -> ParsedFile:
    """Split a plan file into its sections, losing nothing.

    Only a line that is exactly one of the seven headings starts a section, so a
    Markdown heading inside a section ("# Step 1") stays text, and "\\# Goal" is the text
    "# Goal" (see ``_escape``). A heading that appears twice gets both bodies, joined by a
    blank line.
    """
    parsed = ParsedFile()
    current: str | None = None
    buffers: dict[str, list[str]] = {}
    preamble: list[str] = []
    # Lines end at "\n" only: str.splitlines() would also break at form feeds, NEL and
    # U+2028, and a round trip through the file would then rewrite the agent's text.
    for line in text.split("\n"):
        name = HEADINGS.get(line.rstrip())
        if name is not None:
            current = name
            if name in buffers:
                buffers[name].append("")
            else:
                buffers[name] = []
            continue
        if line.startswith("\\") and _heading_like(line):
            line = line[1:]
        (buffers[current] if current is not None else preamble).append(line)
    parsed.sections = {name: "\n".join(lines).strip("\r\n") for name, lines in buffers.items()}
    parsed.preamble = "\n".join(preamble).strip()
    return parsed


# Put between the two texts of a section both the plan file and the database changed.
BOTH_KEPT = "[9plan: both texts are kept: the text above was written meanwhile, the plan file's follows]"


def merge_section(base: str, current: str, edited: str) -> tuple[str, bool]:
    """A section as the plan file's edit makes it: ``base`` is the text the file was written
    from, ``current`` the database's text now, ``edited`` the file's. An edit of an untouched
    section wins; a section nobody edited keeps the database's text; when both changed, both
    texts are kept (an append on each side keeps both appends, in that order) and the second
    value is True."""
    if edited in (base, current):
        return current, False
    if current == base:
        return edited, False
    if current.startswith(base) and edited.startswith(base):
        return _joined(current, edited[len(base) :]), True
    return _joined(current, f"{BOTH_KEPT}\n{edited}"), True


def merge_without_base(current: str, edited: str) -> tuple[str, bool]:
    """A section of a plan file that has no base (an older 9plan's, an unreadable base, a
    base removed): with nothing to tell the agent's edit from text written since, the file
    never overwrites the database's text. A file holding the database's whole text and more
    adds the rest; one whose text the database's begins with is an older copy; otherwise both
    are kept, the database's first, and the second value is True."""
    if edited.startswith(current):
        return edited, False
    if current.startswith(edited):
        return current, False
    return _joined(current, f"{BOTH_KEPT}\n{edited}"), True


def rebase_section(base: str, onto: str, edited: str) -> str:
    """A section of a file written from ``base`` and then edited, moved onto ``onto``: the
    text the file held before ``base`` was written over it (by a write that never committed).
    A section left alone is ``onto``'s; text appended to ``base`` is appended to ``onto``;
    where ``onto`` and ``base`` agree, or the agent rewrote the section, the edit stands."""
    if edited == base:
        return onto
    if onto == base or not edited.startswith(base):
        return edited
    return _joined(onto, edited[len(base) :])


def _joined(head: str, tail: str) -> str:
    head, tail = head.rstrip(), tail.lstrip("\r\n")
    return f"{head}\n\n{tail}" if head else tail
