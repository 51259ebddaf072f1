"""`manage.py nineplan_demo`: two realistic sessions, made through the services, to look at.

The first has a queue, an active plan with notes, completed plans with outcomes, a deferred
and completed plan, discarded plans (one by the agent, one by a staff user), a staff move,
and events spread over a few hours. The second is reviewed and worked by three workers at
once: plans that depend on others, a plan in review, a plan held after its rejections and
one behind it, a plan waiting for a person after its claim ran out, that worker's late
write, two workers holding plans, and a plan ready for the next. So every part of the admin, and every panel of its
home and every column of its board, has something to show.
"""

from __future__ import annotations

import logging
import random
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from sessions_app import clock, services
from sessions_app.errors import LeaseLost
from sessions_app.management.person_command import PersonCommand
from sessions_app.models import Event, Plan, Session
from sessions_app.reads import queries

TASK = "Port the billing service from Flask to Django without downtime"
PARALLEL_TASK = "Ship the public invoice API, three agents in parallel, every plan reviewed"
STAFF = "user:demo-staff"

PLANS = {
    "routes": dict(
        context="The Flask app lives in `billing/`; its routes are spread over four blueprints.",
        goal="Inventory every Flask route and what it touches",
        inputs="- `billing/app.py`\n- `billing/blueprints/*.py`",
        outputs="`docs/routes.md`: one row per route with method, path, tables and owner",
        approach="1. List routes with `flask routes`\n2. Read each view for the tables it uses\n3. Write the table",
        success_criteria="Every route in `flask routes` appears in `docs/routes.md`",
    ),
    "models": dict(
        context="Invoices, line items and customers are raw SQL tables today.",
        goal="Model invoices, line items and customers in Django",
        approach="1. `inspectdb` the three tables\n2. Clean up names and types\n3. Add constraints the SQL implied",
        success_criteria="`makemigrations --check` is clean; the models round-trip a production sample",
    ),
    "webhook": dict(
        context="The payment provider calls `/hooks/payment` on every charge.",
        goal="Port the payment webhook handler with signature checks",
        approach="1. Port the view\n2. Verify the HMAC signature\n3. Replay last week's recorded calls",
        success_criteria="All recorded calls are accepted; a tampered body is rejected with 400",
    ),
    "pdf": dict(
        context="Invoices are exported as PDF by a WeasyPrint template.",
        goal="Port the invoice PDF export",
        approach="Move the template, then the view",
        success_criteria="PDFs are byte-identical for the sample invoices",
    ),
    "customers": dict(
        context="Customer rows need their country codes normalised on the way in.",
        goal="Migrate the customer data",
        approach="1. Dry run on a copy\n2. Fix the rows that fail\n3. Run for real",
        success_criteria="Row counts match; no NULL country codes",
    ),
    "tax": dict(
        context="Tax rates are hard-coded in three places.",
        goal="Move tax rates into a table",
        approach="One model, one data migration, one lookup function",
        success_criteria="The three call sites use the lookup; tests pass",
    ),
    "refunds": dict(
        context="Refunds are done by hand in the database today.",
        goal="Add a refund endpoint",
        approach="1. Service function\n2. API view\n3. Audit event",
        success_criteria="A refund creates a negative line item and an audit row",
    ),
    "ratelimit": dict(
        context="The public invoice lookup is scraped.",
        goal="Rate-limit the public invoice lookup",
        approach="Per-IP token bucket in the cache",
        success_criteria="The 61st request in a minute gets 429",
    ),
    "runbook": dict(
        context="Operations need to know how to deploy the new service.",
        goal="Write the deployment runbook",
        approach="Follow one deploy on staging and write down each step",
        success_criteria="Someone else deploys staging from the runbook alone",
    ),
    "cleanup": dict(
        context="The Flask code stays until the switch-over.",
        goal="Remove the Flask app after the switch-over",
        approach="Delete `billing/`, its requirements and its CI job",
        success_criteria="CI is green without Flask installed",
    ),
    "api_schema": dict(
        context="Customers ask for invoices over HTTP; today they get CSV by e-mail.",
        goal="Design the invoice API's schema",
        approach="1. List the fields customers use\n2. Write the OpenAPI document\n3. Review it with support",
        success_criteria="`openapi.yaml` validates; support signs off the field names",
    ),
    "api_list": dict(
        context="The schema is agreed.",
        goal="Serve the invoice list endpoint",
        approach="A read-only view over the Invoice model, filtered by customer",
        success_criteria="`GET /api/invoices/` matches the schema for the sample customers",
    ),
    "api_pagination": dict(
        context="Some customers have 40,000 invoices.",
        goal="Paginate the invoice list by cursor",
        approach="Keyset pagination on (issued_at, id)",
        success_criteria="Walking every page returns every invoice once, in order",
    ),
    "api_export": dict(
        context="Accounting wants every page at once.",
        goal="Export the whole invoice list as CSV",
        approach="Stream the paginated list into a CSV response",
        success_criteria="A 40,000-invoice export streams in under a minute",
    ),
    "api_tokens": dict(
        context="Customers authenticate with API tokens.",
        goal="Issue and revoke API tokens",
        approach="1. Token model\n2. Admin page\n3. Revocation list",
        success_criteria="A revoked token is refused within a second",
    ),
    "api_changelog": dict(
        context="Integrators read the changelog before every upgrade.",
        goal="Start the API changelog",
        approach="1. One entry a release\n2. Link it from the docs",
        success_criteria="The first release has its entry",
    ),
    "api_sandbox": dict(
        context="Integrators want to try the API without real invoices.",
        goal="Seed a sandbox with fake invoices",
        approach="Factory-made invoices in a separate schema",
        success_criteria="The sandbox answers every documented call",
    ),
    "api_docs": dict(
        context="The schema renders as a reference page.",
        goal="Publish the API reference",
        approach="Render `openapi.yaml` with the docs site's theme",
        success_criteria="Every endpoint has an example",
    ),
    "currency": dict(
        context="`test_currency_rounding` fails since the models landed.",
        goal="Fix the failing currency rounding test",
        approach="1. Reproduce\n2. Compare with Flask's `Decimal` context\n3. Fix the quantize call",
        success_criteria="`pytest -k currency` passes; no other test changes",
    ),
}


# How many service calls each story makes: its span is shared out between them, so that
# its last step lands a few minutes before the demo runs (a test checks both counts).
FIRST_STEPS = 24
PARALLEL_STEPS = 32


class Story:
    """The services, each call made a few minutes after the one before it.

    The services read the time from ``clock.now()``; each call here runs with the clock
    stopped at its moment in the story, so every time written (events, revisions, claims,
    leases, the stamps in Notes) agrees with every other, and the last step lands just
    before now: the leases of plans still held read as they would in a real session."""

    def __init__(self, span: timedelta, steps: int, *, seed: int):
        rng = random.Random(seed)
        weights = [rng.uniform(0.4, 1.6) for _ in range(steps)]
        # The gaps before each step, summing to the span less the last step's distance
        # from now; a step beyond the count (the story grew) comes a minute after the last.
        self.gaps = [(span - LAST_STEP_BEFORE_NOW) * (w / sum(weights)) for w in weights]
        self.at = timezone.now() - span
        self.steps = 0

    def __getattr__(self, name: str):
        call = getattr(services, name)

        def at_its_moment(*args, **kwargs):
            self.at += self.gaps[self.steps] if self.steps < len(self.gaps) else timedelta(minutes=1)
            self.steps += 1
            with clock.stopped_at(self.at):
                return call(*args, **kwargs)

        return at_its_moment


# Where the last step of a story may land, at the latest: a few minutes ago.
LAST_STEP_BEFORE_NOW = timedelta(minutes=3)


class Command(PersonCommand):
    help = (
        "Create a realistic demo session to look at in the admin. It has a queue, an active plan, history and "
        "events over time; its name and admin page are printed, and -v 2 lists every plan and shows the "
        "services' log lines on stderr."
    )

    def add_arguments(self, parser):
        parser.add_argument("--hours", type=int, default=6, help="how far back the session's events go (default 6)")

    def handle(self, *args, hours: int, verbosity: int = 1, **options):
        span = timedelta(hours=max(hours, 1))
        # Both stories run side by side over the last ``hours`` hours, each step a few
        # minutes after the one before, on the clock the services read.
        session = self._build(Story(span, FIRST_STEPS, seed=1))
        parallel = self._build_parallel(Story(span, PARALLEL_STEPS, seed=2))
        self._dated(session)
        self._dated(parallel)
        if verbosity >= 1:
            self._report(session, detailed=verbosity >= 2)
            self._report(parallel, detailed=verbosity >= 2)

    def _build(self, story: Story) -> Session:
        s = story.session_create(task_description=TASK)
        name = s.name

        def enqueue(*keys: str, position: str = "back") -> list[Plan]:
            added = story.plan_enqueue_many(session_name=name, plans=[PLANS[k] for k in keys], position=position)
            return [placed.plan for placed in added]

        def work(outcome: str, *, note: str | None = None) -> None:
            story.plan_pull(session_name=name)
            if note is not None:
                story.plan_note(session_name=name, text=note)
            story.plan_complete(session_name=name, outcome=outcome)

        enqueue("routes", "models", "webhook", "pdf", "customers", "tax")
        work(
            "Found **23 routes** in 4 blueprints; two are dead code. Table in `docs/routes.md`.",
            note="Two routes are dead code: `/legacy/export` and `/ping2`.",
        )
        work("Three models with constraints; `makemigrations --check` clean; sample of 10,000 invoices round-trips.")
        story.plan_pull(session_name=name)
        story.plan_defer(session_name=name, reason="Blocked: waiting for the provider's signing secret for staging.")
        story.plan_pull(session_name=name)
        story.plan_discard(
            session_name=name, reason="Superseded: invoice PDFs move to the reporting service next quarter."
        )
        work(
            "Migrated 182,304 customers; counts match; no NULL country codes.",
            note="41 rows had lowercase country codes; normalised in the migration.",
        )
        work("Rates now in `TaxRate`; the three call sites use `tax.rate_for()`.")
        work("Webhook ported; 1,204 recorded calls accepted, tampered bodies rejected with 400.")
        later = enqueue("refunds", "ratelimit", "runbook", "cleanup")
        enqueue("currency", position="front")
        # A reviewer with change rights tidied the queue: these go through the same services.
        story.plan_discard_any(
            session_name=name, plan_id=later[2].id, reason="The runbook lives in the ops repository.", actor=STAFF
        )
        story.plan_pull(session_name=name)
        story.plan_move(session_name=name, plan_id=later[1].id, position="front", actor=STAFF)
        story.plan_note(session_name=name, text="Reproduced: Flask used ROUND_HALF_EVEN, we use ROUND_HALF_UP.")
        return s

    def _build_parallel(self, story: Story) -> Session:
        # One claim may run out before a plan waits for a person: the demo shows one.
        s = story.session_create(task_description=PARALLEL_TASK, review="required", max_attempts=1)
        name = s.name

        def enqueue(key: str, *, after: tuple[Plan, ...] = ()) -> Plan:
            wanted = {**PLANS[key], "depends_on": [p.id for p in after]} if after else PLANS[key]
            return story.plan_enqueue_many(session_name=name, plans=[wanted], position="front")[0].plan

        def work(key: str, worker: str, outcome: str, *, after: tuple[Plan, ...] = ()) -> Plan:
            plan = enqueue(key, after=after)
            story.plan_pull(session_name=name, worker=worker)
            story.plan_note(session_name=name, worker=worker, text=f"Started by {worker}.")
            story.plan_complete(session_name=name, worker=worker, outcome=outcome)
            return plan

        schema = work("api_schema", "alpha", "Schema in `openapi.yaml`: 14 fields; support signed off the names.")
        story.plan_review(session_name=name, plan_id=schema.id, decision="approve", notes="Clear names.", actor=STAFF)
        # Rejected until it is held: nobody pulls it until a person decides.
        pagination = work("api_pagination", "beta", "Offset pagination; fast enough on the sample.", after=(schema,))
        while Plan.objects.get(id=pagination.id).status != Plan.Status.HELD:
            if Plan.objects.get(id=pagination.id).status == Plan.Status.QUEUED:
                story.plan_pull(session_name=name, worker="beta")
                story.plan_complete(session_name=name, worker="beta", outcome="Offset pagination, with an index.")
            story.plan_review(
                session_name=name,
                plan_id=pagination.id,
                decision="reject",
                notes="Offsets skip rows when invoices arrive meanwhile: use a cursor, as the plan says.",
                actor=STAFF,
            )
        enqueue("api_export", after=(pagination,))  # blocked behind the held plan
        # Waiting for a person: its one claim was taken back, and the worker wrote late.
        sandbox = enqueue("api_sandbox")
        story.plan_pull(session_name=name, worker="gamma")
        services_log = logging.getLogger("nineplan.services")
        level = services_log.level
        services_log.setLevel(logging.ERROR)  # a staged reclaim is no warning for whoever runs the demo
        try:
            story.plan_reclaim(session_name=name, plan_id=sandbox.id, actor=STAFF)
        finally:
            services_log.setLevel(level)
        try:
            story.plan_note(session_name=name, worker="gamma", text="Seeded 500 invoices; the PDFs are next.")
        except LeaseLost:
            pass  # the note is kept as a late write, shown with the plan
        # In review: the reviewer has not got to it yet.
        work("api_list", "alpha", "`GET /api/invoices/` serves the schema; 12 tests.", after=(schema,))
        # Two workers holding plans now.
        enqueue("api_docs", after=(schema,))
        story.plan_pull(session_name=name, worker="alpha")
        story.plan_note(session_name=name, worker="alpha", text="Theme picked; examples for 3 of 5 endpoints.")
        enqueue("api_tokens")
        story.plan_pull(session_name=name, worker="beta")
        # Ready for the next free worker: the board has a card in every column.
        story.plan_enqueue_many(session_name=name, plans=[PLANS["api_changelog"]], position="back")
        return s

    @staticmethod
    def _dated(session: Session) -> None:
        # The session row takes the database's time; its story began with its first event.
        first = Event.objects.filter(session=session).order_by("id").values_list("created_at", flat=True).first()
        Session.objects.filter(name=session.name).update(created_at=first)

    @staticmethod
    def _awaiting(plans) -> str:
        in_review = plans.filter(status=Plan.Status.IN_REVIEW).count()
        held = plans.filter(status=Plan.Status.HELD).count()
        return f", {in_review} in review, {held} held" if in_review or held else ""

    def _report(self, session: Session, *, detailed: bool) -> None:
        state = queries.session_state(session.name, limit=None)
        plans = Plan.objects.filter(session=session)
        events = Event.objects.filter(session=session).order_by("created_at")
        first, last = events.first(), events.last()
        assert first is not None and last is not None  # a session's creation is its first event
        hours = (last.created_at - first.created_at).total_seconds() / 3600
        out = self.stdout.write
        out(
            f"Created demo session {session.name}: {state.queue_length} queued, {len(state.claimed)} active, "
            f"{plans.filter(status=Plan.Status.COMPLETED).count()} completed, "
            f"{plans.filter(status=Plan.Status.DISCARDED).count()} discarded"
            f"{self._awaiting(plans)}; "
            f"{events.count()} events over {hours:.0f} hours."
        )
        if detailed:
            out(f"  task:       {session.task_description}")
            out(f"  plan files: {queries.session_path(session.name)}")
            for plan in state.claimed:
                out(f"  active:     {plan.id}  {plan.goal} (worker {plan.worker})")
            for place, plan in enumerate(state.queue, start=1):
                out(f"  queued #{place}:  {plan.id}  {plan.goal}")
            for plan in plans.filter(status=Plan.Status.COMPLETED).order_by("completed_at"):
                out(f"  completed:  {plan.id}  {plan.goal}")
            for status in (Plan.Status.IN_REVIEW, Plan.Status.HELD):
                for plan in plans.filter(status=status).order_by("updated_at"):
                    out(f"  {status.replace('_', ' ') + ':':11} {plan.id}  {plan.goal}")
            for plan in plans.filter(status=Plan.Status.DISCARDED).order_by("discarded_at"):
                out(f"  discarded:  {plan.id}  {plan.goal} ({plan.discard_reason})")
            out(f"  events:     {first.created_at:%Y-%m-%d %H:%M} to {last.created_at:%H:%M} UTC")
        out(f"Admin page: {reverse('admin:sessions_app_session_change', args=[session.name])}")
        out(f"Board: {reverse('admin:sessions_app_board', args=[session.name])}")
