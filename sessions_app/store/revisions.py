"""Every version of a plan's text, kept as reverse deltas (docs/design.md, "Model and invariants").

The plan row holds the latest text. Each change to it adds a revision that records who made
it, when, what kind of change it was and which sections it touched, and for each of those
sections how to get the text before the change back from the text after it: the length
of the prefix both share and the rest of the text before. An append to the Notes shares
all of the earlier Notes but their trailing whitespace, so it costs a few characters, and
10,000 appends store 10,000 small rows, never 10,000 copies of the plan.

Reading walks back from the latest text, undoing one revision at a time: the most recent
versions, the ones people look at, cost the least.

``record`` is called by the writers inside their write transaction, after they changed the
plan in memory and before (or after) they wrote it: it compares with the sections as they
were before the change. A change that leaves the text as it was records nothing.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime

from sessions_app import clock
from sessions_app.models import SECTIONS, Plan, Revision

# Diffs of very long sections are cut to this many lines on the page; the REST API gives
# the whole texts.
DIFF_LINES = 400


def _shared_prefix(before: str, after: str) -> int:
    """How many leading characters ``before`` and ``after`` share."""
    if after.startswith(before):
        return len(before)
    trimmed = before.rstrip()
    if after.startswith(trimmed):  # a note appended: only trailing whitespace went
        return len(trimmed)
    # Binary search with slice comparisons: each is a memory compare, so even a long
    # section costs a few dozen of them, never a character-by-character loop.
    low, high = 0, min(len(before), len(after))
    while low < high:
        mid = (low + high + 1) // 2
        if before[:mid] == after[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def delta(before: dict[str, str], after: dict[str, str]) -> dict[str, list]:
    """{section: [kept, rest]} such that before[section] == after[section][:kept] + rest,
    for the sections that differ."""
    undo = {}
    for name in SECTIONS:
        old, new = before.get(name, ""), after.get(name, "")
        if old != new:
            kept = _shared_prefix(old, new)
            undo[name] = [kept, old[kept:]]
    return undo


def apply_undo(after: dict[str, str], undo: dict[str, list]) -> dict[str, str]:
    before = dict(after)
    for name, (kept, rest) in undo.items():
        before[name] = after.get(name, "")[:kept] + rest
    return before


def save(
    plan: Plan, *, kind: str, actor: str, before: dict[str, str] | None, at: datetime | None = None, first: bool = False
) -> int | None:
    """Keep the change from ``before`` (None: the plan is new) to the plan's text now;
    returns the revision's number, or None when the text did not change. ``first``: the
    plan was just added here and has no revision yet, so this one is number 1."""
    after = plan.sections()
    if before is None:
        changed, undo = [name for name in SECTIONS if after[name]], {}
    else:
        undo = delta(before, after)
        if not undo:
            return None
        changed = list(undo)
    number = 1
    if not first:  # an imported plan may bring revisions of its own: not first
        # The next number of the plan's: the writer holds the plan's row (or SQLite's write
        # turn), so no other writer numbers this plan's revisions meanwhile.
        last = Revision.objects.filter(plan_id=plan.id).order_by("-number").values_list("number", flat=True).first()
        number = (last or 0) + 1
    Revision.objects.create(
        plan_id=plan.id,
        number=number,
        kind=kind,
        actor=actor,
        sections=changed,
        undo=undo,
        created_at=at or clock.now(),
    )
    return number


# --- reading ----------------------------------------------------------------------------


@dataclass
class Version:
    """One revision with the texts of the sections it changed, before and after it."""

    revision: Revision
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)

    @property
    def number(self) -> int:
        return self.revision.number

    def diffs(self, *, max_lines: int = DIFF_LINES) -> list[tuple[str, list[tuple[str, str]]]]:
        """Per changed section, its unified diff as (kind, line) pairs: kind is "add",
        "del", "hunk" or "same". Lines are plain text, for the template to escape."""
        return [
            (name, unified_diff(self.before.get(name, ""), self.after.get(name, ""), max_lines=max_lines))
            for name in self.revision.sections
            if name in SECTIONS
        ]


def unified_diff(before: str, after: str, *, max_lines: int = DIFF_LINES) -> list[tuple[str, str]]:
    """The unified diff of two texts as (kind, line) pairs: kind is "add", "del", "hunk" or
    "same". Lines are plain text, for the template to escape."""
    lines: list[tuple[str, str]] = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        lines.append((kind, line))
        if len(lines) >= max_lines:
            lines.append(("hunk", "… (diff cut short; the REST API gives the whole texts)"))
            break
    return lines


def count(plan: Plan) -> int:
    return Revision.objects.filter(plan=plan).count()


def versions(plan: Plan, *, limit: int | None = 50, down_to: int | None = None) -> list[Version]:
    """The latest ``limit`` revisions of the plan (newest first), or every one from the
    latest down to number ``down_to``, each with its changed sections' texts."""
    rows = Revision.objects.filter(plan=plan).order_by("-number")
    if down_to is not None:
        rows = rows.filter(number__gte=down_to)
    elif limit is not None:
        rows = rows[:limit]
    current = plan.sections()
    found = []
    for rev in rows:
        before = apply_undo(current, rev.undo)
        changed = [n for n in rev.sections if n in SECTIONS]
        # The first revision (the plan's creation) had nothing before it.
        version = Version(rev, {n: before[n] if rev.undo else "" for n in changed}, {n: current[n] for n in changed})
        found.append(version)
        current = before
    return found


def text_at(plan: Plan, number: int) -> dict[str, str] | None:
    """The plan's sections right after revision ``number``; None if it has no such revision."""
    if not Revision.objects.filter(plan=plan, number=number).exists():
        return None
    rows = Revision.objects.filter(plan=plan, number__gt=number).order_by("-number").values_list("undo", flat=True)
    current = plan.sections()
    for undo in rows:
        current = apply_undo(current, undo)
    return current


def revision(plan: Plan, number: int) -> Version | None:
    """One revision with the whole text after it and the changed sections' texts before it."""
    after = text_at(plan, number)
    if after is None:
        return None
    rev = Revision.objects.get(plan=plan, number=number)
    whole = apply_undo(after, rev.undo) if rev.undo else dict.fromkeys(SECTIONS, "")
    return Version(rev, {n: whole[n] for n in rev.sections if n in SECTIONS}, after)


# --- export and import -------------------------------------------------------------------


def exported(plan_ids: list[str]) -> dict[str, list[dict]]:
    """The revisions of these plans as plain data, by plan id, oldest first."""
    found: dict[str, list[dict]] = {}
    for rev in Revision.objects.filter(plan_id__in=plan_ids).order_by("plan_id", "number"):
        found.setdefault(rev.plan_id, []).append(
            {
                "number": rev.number,
                "kind": rev.kind,
                "actor": rev.actor,
                "sections": rev.sections,
                "undo": rev.undo,
                "created_at": rev.created_at.isoformat(),
            }
        )
    return found
