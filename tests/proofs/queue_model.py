"""The plain in-memory model of what 9plan's queue promises, and the random inputs the
model-based test (test_model_based.py) sends to both it and the real services."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from sessions_app import clock, planfiles

REAL_NOW = clock.now

STAMP = r"Deferred \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC: "
REJECTED = r"### Rejected in review by user:rita, \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\n\n"
MAX_REJECTIONS = 3


def _no_heading_line(text: str) -> bool:
    # A line that is exactly a section heading would start a new section when the file is
    # read back; that is the file format's one reserved shape, so agents' text avoids it.
    return not any(line.rstrip() in planfiles.HEADINGS for line in text.split("\n"))


# Any Unicode an agent could send and 9plan can store: no NUL, no lone surrogates.
_chars = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
TEXT = st.text(_chars, min_size=1, max_size=24).filter(lambda t: not t.isspace() and _no_heading_line(t))
# Line structure matters most to the file round trip and the append rule.
LINES = st.lists(
    st.one_of(TEXT, st.sampled_from(["", " ", "\t", "\r", "  indented", "\u00a0", "\u2028", "# Step 1"])),
    min_size=1,
    max_size=4,
).map("\n".join)
SOME_TEXT = st.one_of(TEXT, LINES.filter(lambda t: not t.isspace() and t != "" and _no_heading_line(t)))
OPTIONAL = st.one_of(st.none(), st.just(""), SOME_TEXT)
POSITION = st.sampled_from([None, "front", "back"])
PLAN = st.fixed_dictionaries(
    {"context": SOME_TEXT, "goal": SOME_TEXT, "approach": SOME_TEXT, "success_criteria": SOME_TEXT},
    optional={"inputs": OPTIONAL, "outputs": OPTIONAL},
)
BLANK = st.sampled_from(["", " ", "\n\n", "\u3000\u00a0", "\u2028"])


def compose(stored: str, fragment: str) -> str:
    """The append rule (docs/design.md, "Plan files"), written independently of the
    service: S' + blank line + F'."""
    head = stored.rstrip()
    lines = fragment.split("\n")
    while len(lines) > 1 and lines[0].strip() == "":
        lines.pop(0)
    tail = "\n".join(lines)
    return tail if head == "" else f"{head}\n\n{tail}"


@dataclass
class ModelPlan:
    sections: dict[str, str]
    first: dict[str, str] = field(default_factory=dict)  # the text as added
    review: bool = False
    rejections: int = 0
    status: str = "queued"
    outcome: str = ""
    discard_reason: str = ""
    deps: set[str] = field(default_factory=set)
    worker: str | None = None
    lease_until: float | None = None
    attempts: int = 0
    waiting: bool = False
    reclaims: int = 0  # claims taken back, ever: they name the plan's file


LEASE = 60
MAX_ATTEMPTS = 2
WORKERS = st.sampled_from([None, "default", "w1", "w2"])


@dataclass
class Model:
    queue: list[str] = field(default_factory=list)
    # The plan each worker holds (its claim), and the plan each worker last lost to an expired claim.
    claimed: dict[str, str] = field(default_factory=dict)
    lost: dict[str, str] = field(default_factory=dict)
    plans: dict[str, ModelPlan] = field(default_factory=dict)
    completed: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    in_review: list[str] = field(default_factory=list)
    # Plans rejected too many times (status "held"), waiting for a person to release them.
    held: list[str] = field(default_factory=list)
    review_required: bool = False
    # What the agent wrote into a claimed plan's file and 9plan has not read back yet.
    file_notes: dict[str, tuple[str, str]] = field(default_factory=dict)
    now: float = 0.0

    def take_in(self, plan_id: str) -> None:
        """What 9plan reads back from the file before it changes the plan."""
        if plan_id in self.file_notes:
            _, notes = self.file_notes.pop(plan_id)
            current = self.plans[plan_id].sections["notes"]
            if notes.strip("\r\n") != current.strip("\r\n"):
                self.plans[plan_id].sections["notes"] = notes.strip("\r\n")

    def stem(self, plan_id: str) -> str:
        """The name of the plan's file now: after a reclaim, the new claim's own."""
        taken = self.plans[plan_id].reclaims
        return f"{plan_id}-{taken}" if taken else plan_id

    def ready(self, plan_id: str) -> bool:
        mp = self.plans[plan_id]
        return not mp.waiting and all(self.plans[d].status == "completed" for d in mp.deps)

    def expired(self, keep: str | None = None) -> list[str]:
        """Expired claims, but the one of worker ``keep`` (a pull never reclaims its own)."""
        found = [pid for w, pid in self.claimed.items() if self.plans[pid].lease_until < self.now and w != keep]
        return sorted(found, key=lambda pid: (self.plans[pid].lease_until, pid))


def worker_name(worker: str | None) -> str:
    return worker or "default"
