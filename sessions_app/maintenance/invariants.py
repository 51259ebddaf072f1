"""The invariant checks of a session: what 9plan_admin_validate, the admin's session page,
the REST validation endpoint, the repair and the import rely on. Each issue names the plan
and the fix (docs/design.md, "Model and invariants"). Reads only."""

from __future__ import annotations

from dataclasses import dataclass, field

from sessions_app import planfiles, search
from sessions_app.models import SECTIONS, Plan, PlanDependency, Session
from sessions_app.reads import queries

INVARIANTS = (
    "single_active_plan",
    "claims_valid",
    "dependencies_valid",
    "queue_order_preserved",
    "files_match_database",
    "no_orphaned_files",
    "search_index_in_sync",
)


@dataclass
class InvariantReport:
    invariants: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(INVARIANTS, True))
    issues: list[str] = field(default_factory=list)
    # The same issues grouped by the invariant they break, for pages that show each check.
    issues_by_invariant: dict[str, list[str]] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return all(self.invariants.values())

    def fail(self, invariant: str, issue: str) -> None:
        self.invariants[invariant] = False
        self.issues.append(issue)
        self.issues_by_invariant.setdefault(invariant, []).append(issue)


def check_invariants(name: object) -> InvariantReport:
    """Checks the session's invariants; every issue names the plan and the fix."""
    session = queries.get_session(name)
    result = InvariantReport()
    plans = list(
        Plan.objects.filter(session=session, status__in=[Plan.Status.QUEUED, Plan.Status.ACTIVE]).only(
            "id",
            "status",
            "sort_key",
            "session_id",
            "worker",
            "claimed_at",
            "lease_expires_at",
            "waiting_for_person",
            "reclaims",
            *SECTIONS,
        )
    )
    active = [p for p in plans if p.status == Plan.Status.ACTIVE]
    by_worker: dict[str | None, list[str]] = {}
    for p in active:
        by_worker.setdefault(p.worker, []).append(p.id)
    for worker, ids in by_worker.items():
        if len(ids) > 1:
            result.fail(
                "single_active_plan",
                f"worker '{worker}' holds {len(ids)} active plans ({', '.join(ids)}); "
                "fix: requeue all but one with the admin.",
            )
    _check_claims(session, plans, result)
    _check_dependencies(session, result)
    sort_keys: dict[int, str] = {}
    for p in plans:
        if p.status != Plan.Status.QUEUED:
            continue
        if p.sort_key is None:
            result.fail("queue_order_preserved", f"plan {p.id} is queued without a position; fix: 9plan repair.")
        elif p.sort_key in sort_keys:
            result.fail(
                "queue_order_preserved",
                f"plans {sort_keys[p.sort_key]} and {p.id} share a place in the queue; fix: 9plan repair.",
            )
        else:
            sort_keys[p.sort_key] = p.id
    _check_files(session, plans, result)
    indexed = search.indexed_count(session.name)
    if indexed is not None:
        completed = Plan.objects.filter(session=session, status=Plan.Status.COMPLETED).count()
        if indexed != completed:
            result.fail(
                "search_index_in_sync",
                f"the search index holds {indexed} entries for this session's {completed} completed plans; "
                "fix: 9plan repair rebuilds the index.",
            )
    return result


def _check_claims(session: Session, plans: list[Plan], result: InvariantReport) -> None:
    """Every active plan has a worker and a lease; only active plans have a lease; a plan
    waits for a person only while queued (the database's checks hold these too: a database
    restored from elsewhere may not have them)."""
    for p in plans:
        if p.status == Plan.Status.ACTIVE and (p.worker is None or p.claimed_at is None or p.lease_expires_at is None):
            result.fail(
                "claims_valid",
                f"plan {p.id} is active without a worker and a lease; fix: requeue it with the admin.",
            )
        elif p.status == Plan.Status.QUEUED and p.lease_expires_at is not None:
            result.fail("claims_valid", f"plan {p.id} is queued but still has a lease; fix: 9plan repair.")
    stale = Plan.objects.filter(session=session, lease_expires_at__isnull=False).exclude(status=Plan.Status.ACTIVE)
    for plan_id in stale.exclude(status=Plan.Status.QUEUED).values_list("id", flat=True)[:ISSUES_PER_CHECK]:
        result.fail("claims_valid", f"plan {plan_id} is closed but still has a lease; fix: 9plan repair.")
    waiting = Plan.objects.filter(session=session, waiting_for_person=True).exclude(status=Plan.Status.QUEUED)
    for plan_id in waiting.values_list("id", flat=True)[:ISSUES_PER_CHECK]:
        result.fail(
            "claims_valid", f"plan {plan_id} is marked as waiting for a person but is not queued; fix: 9plan repair."
        )


ISSUES_PER_CHECK = 20


# Statuses a plan reaches only once it was pulled, so only once its dependencies were completed.
HANDED_OUT = (Plan.Status.ACTIVE, Plan.Status.IN_REVIEW, Plan.Status.HELD, Plan.Status.COMPLETED)


def _check_dependencies(session: Session, result: InvariantReport) -> None:
    """Dependencies stay within the session and form no cycle; no plan was handed out or
    completed before the plans it depends on were completed; no open plan waits for a
    discarded plan (a discard removes itself from its dependents)."""
    links = list(
        PlanDependency.objects.filter(plan__session=session).values_list(
            "plan_id", "plan__status", "depends_on_id", "depends_on__status", "depends_on__session_id"
        )
    )
    graph: dict[str, list[str]] = {}
    for plan_id, status, dep, dep_status, dep_session in links:
        graph.setdefault(plan_id, []).append(dep)
        if dep_session != session.name:
            result.fail(
                "dependencies_valid",
                f"plan {plan_id} depends on {dep} of another session ({dep_session}); fix: remove the dependency.",
            )
        elif status in HANDED_OUT and dep_status != Plan.Status.COMPLETED:
            result.fail(
                "dependencies_valid",
                f"plan {plan_id} is {status} though the plan it depends on, {dep}, is {dep_status}; fix: requeue "
                f"{plan_id} if it is active, or complete {dep}.",
            )
        elif dep_status == Plan.Status.DISCARDED and status == Plan.Status.QUEUED:
            result.fail(
                "dependencies_valid",
                f"queued plan {plan_id} waits for discarded plan {dep}, which will never complete; fix: discard or "
                f"re-add {plan_id}.",
            )
    # A cycle is impossible when dependencies are only added to existing plans; checked
    # anyway, for data restored or edited by hand.
    if has_cycle(graph):
        result.fail("dependencies_valid", "the session's dependencies form a cycle; fix: remove one of them.")


def has_cycle(graph: dict[str, list[str]]) -> bool:
    """Depth-first, without recursion: a chain of plans may be long."""
    done: set[str] = set()
    for start in graph:
        if start in done:
            continue
        on_path = {start}
        stack = [(start, iter(graph.get(start, ())))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                return True
            elif child not in done:
                on_path.add(child)
                stack.append((child, iter(graph.get(child, ()))))
    return False


def _check_files(session: Session, plans: list[Plan], result: InvariantReport) -> None:
    """The plan files against the open plans. Entries are judged by their type alone, and
    only the active plan's file (the one an agent edits) is read: safely, and bounded."""
    found = planfiles.scan(session.name)
    if found.problem:
        result.fail(
            "files_match_database",
            f"{found.problem}: {planfiles.LEFT_ALONE}, nor anything in it; fix: replace it with a real folder, "
            "then 9plan repair renders the plan files from the database.",
        )
        return
    current = {p.file_stem: p for p in plans}
    for stem, p in current.items():
        if planfiles.unreadable_base(planfiles.read_base(session.name, stem)):
            result.fail(
                "files_match_database",
                f"the base {planfiles.base_path(session.name, stem)} of plan {p.id}'s file is not a record 9plan can "
                "read: the file is read as having no base (its edits never overwrite the database's text); fix: "
                "none needed, the plan's next write replaces it (or remove it by hand).",
            )
        what = found.files.get(stem)
        if what is None:
            # No copy on this machine is no fault (the database holds the plan; a pull writes
            # the file): only a file written here and then lost is.
            if planfiles.read_base(session.name, stem) is not None:
                result.fail(
                    "files_match_database",
                    f"plan {p.id} ({p.status}) has no plan file {stem}.txt, though one was written here; fix: "
                    "9plan repair re-renders it from the database.",
                )
        elif what:
            result.fail(
                "files_match_database",
                f"plan file {stem}.txt ({p.status} plan) is {what}, not a regular file: {planfiles.LEFT_ALONE}; fix: remove "
                "it, then 9plan repair renders the file from the database.",
            )
        elif p.status == Plan.Status.ACTIVE:
            read = planfiles.read_plan_file(session.name, stem)
            if read.state in (planfiles.TOO_LARGE, planfiles.NOT_UTF8, planfiles.REFUSED):
                result.fail(
                    "files_match_database",
                    f"plan file {stem}.txt (active plan) {read.problem}: it cannot be taken in, and the database "
                    "keeps the last good text; fix: shorten it or make it UTF-8 text again (note, defer and "
                    "complete refuse a file that is too large; bytes that are not UTF-8 are kept aside).",
                )
    open_ids = {p.id for p in plans}
    leftover = sorted(set(found.files) - set(current))
    # A leftover copy is only harmless if its plan's row (which holds all its text) is there.
    known = dict(Plan.objects.filter(session=session, id__in={planfiles.stem_plan_id(s) for s in leftover})
                 .values_list("id", "version")) if leftover else {}  # fmt: skip
    for stem in leftover:
        what = found.files[stem]
        plan_id = planfiles.stem_plan_id(stem)
        if what:
            result.fail(
                "no_orphaned_files",
                f"{stem}.txt in the plans folder is {what} and belongs to no queued or active plan: {planfiles.LEFT_ALONE}; "
                "fix: remove it by hand.",
            )
        elif plan_id in known and planfiles.untouched(session.name, stem, known[plan_id]):
            continue  # a copy nobody edited of a plan that moved on (here or on another server): no text at stake
        elif plan_id in open_ids:
            result.fail(
                "no_orphaned_files",
                f"plan file {stem}.txt is the file of an earlier claim of plan {plan_id}, edited after the claim was "
                "taken back, and never read; fix: 9plan repair keeps its text aside and removes it.",
            )
        else:
            result.fail(
                "no_orphaned_files",
                f"plan file {stem}.txt belongs to no queued or active plan; "
                "fix: 9plan repair keeps its text aside and removes it.",
            )
    for name, age, what in found.temp:
        if what:
            result.fail(
                "no_orphaned_files",
                f"{name} in the plans folder is {what}: {planfiles.LEFT_ALONE}; fix: remove it by hand.",
            )
        # A fresh temporary file may be another process's write in progress, not debris.
        elif age >= planfiles.TEMP_FILE_GRACE_SECONDS:
            result.fail(
                "no_orphaned_files", f"temporary file {name} was left by an interrupted write; fix: 9plan repair."
            )
