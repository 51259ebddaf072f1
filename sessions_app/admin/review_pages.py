"""The reviewers' side of the review gate in the admin: the review inbox (the plans in review
with a diff of what changed since their pull, the held plans and the plans waiting after
their attempts), approve (with optional notes) and reject on the inbox, the home and the
plan page, a plan's revisions with their diffs, restoring one (asked first when a worker
holds the plan), and a session's review policy.

Reading is open to every reviewer; deciding needs the review permission (``can_review``),
restoring and changing the policy the staff permission (``can_intervene``). Each change is
one service call (sessions_app/review.py) with the staff user as the actor.
"""

from __future__ import annotations

import functools

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from sessions_app import access, clock, services
from sessions_app.admin import reads as admin_reads
from sessions_app.admin import render
from sessions_app.admin.model_admin import plan_url, redirect_back, session_url
from sessions_app.admin.roles import actor_for, can_intervene, can_review, can_view
from sessions_app.errors import NineplanError, NotPermitted, SessionNotFound
from sessions_app.identifiers import is_plan_id, is_session_name
from sessions_app.models import SECTION_TITLES, Plan, ReviewPolicy
from sessions_app.reads import needs_you, queries
from sessions_app.store import revisions

APPROVED = "Approved plan {plan}: it is completed and searchable."
REJECTED = "Sent plan {plan} back to the front of the queue with your notes."
HELD = "Plan {plan} was rejected too many times: it is held until someone requeues or discards it."
RESTORED = "Restored plan {plan} to revision {number} (kept as a new revision)."
RELEASED = "Returned held plan {plan} to the front of the queue."
POLICY = "Session {session}: review is now '{review}'."
FAILED = "Plan {plan}: {category}: {message}"
REVISIONS_SHOWN = 50
INBOX_SHOWN = 100


def urls(model_admin) -> list:
    wrap = model_admin.admin_site.admin_view
    return [
        path("review/", wrap(lambda r: inbox_view(model_admin, r)), name="sessions_app_plan_review_inbox"),
        path("<str:plan_id>/review/", wrap(decide_view), name="sessions_app_plan_review"),
        path("<str:plan_id>/restore/", wrap(restore_view), name="sessions_app_plan_restore"),
        path("<str:plan_id>/release/", wrap(release_view), name="sessions_app_plan_release"),
        path("session/<str:name>/review-policy/", wrap(policy_view), name="sessions_app_session_review_policy"),
    ]


def _changed_since_pulled(plan: Plan) -> list[str]:
    """What the agent changed in the plan's text since it last pulled it, one line a revision."""
    return needs_you.since_pull([plan])[plan.id].lines


def plan_context(request, plan: Plan) -> dict:
    """What the plan page shows of review and revisions."""
    shown = revisions.versions(plan, limit=REVISIONS_SHOWN)
    return {
        "can_review": can_review(request.user, plan) and plan.status == Plan.Status.IN_REVIEW,
        "can_restore": can_intervene(request.user, plan) and plan.is_open,
        "can_release": can_intervene(request.user, plan) and plan.status == Plan.Status.HELD,
        "revisions": [
            {
                "number": v.number,
                "kind": v.revision.kind,
                "actor": v.revision.actor,
                "at": v.revision.created_at,
                "sections": [(SECTION_TITLES.get(name, name), lines) for name, lines in v.diffs()],
                "current": i == 0,
            }
            for i, v in enumerate(shown)
        ],
        "revision_count": revisions.count(plan),
        "changed_since_pulled": _changed_since_pulled(plan) if plan.status == Plan.Status.IN_REVIEW else [],
        # Why a held plan is held: the reviewer's notes of its last rejection.
        "last_rejection": queries.last_rejection(plan) if plan.status == Plan.Status.HELD else None,
    }


INBOX_PARTS = {
    "inbox-review": "admin/sessions_app/live/inbox_review.html",
    "inbox-held": "admin/sessions_app/live/inbox_held.html",
    "inbox-waiting": "admin/sessions_app/live/inbox_waiting.html",
}


def inbox_context(request) -> dict:
    """Everything that waits for a person, in a fixed number of queries however many rows:
    the plans in review with what changed since their pull, the held plans, the plans
    waiting after their attempts ran out (sessions_app/reads/needs_you.py)."""
    counts = needs_you.counts()
    waiting = needs_you.oldest_first(needs_you.IN_REVIEW, limit=INBOX_SHOWN, whole=True)
    changed = needs_you.since_pull(waiting)
    caller = access.caller_for_user(request.user)
    reviewing, intervening = can_review(request.user), can_intervene(request.user)
    rows = [
        {
            "plan": p,
            "outcome": render.markdown(p.outcome),
            "changed": changed[p.id].lines,
            "diffs": [
                (SECTION_TITLES.get(name, name), revisions.unified_diff(before, after))
                for name, before, after in changed[p.id].sections
            ],
            "can_review": reviewing and caller.allows(access.REVIEW, p.project),
        }
        for p in waiting
    ]

    def decidable(plans):
        return [{"plan": p, "can_decide": intervening and caller.allows(access.MANAGE, p.project)} for p in plans]

    return {
        "rows": rows,
        "total": counts.in_review,
        "counts": counts,
        "held": decidable(needs_you.oldest_first(needs_you.HELD, limit=INBOX_SHOWN)),
        "waiting_plans": decidable(needs_you.oldest_first(needs_you.WAITING, limit=INBOX_SHOWN)),
        "now": clock.now(),
        "here": reverse("admin:sessions_app_plan_review_inbox"),
    }


def inbox_view(model_admin, request):
    if not can_view(request.user):
        raise PermissionDenied
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    context = model_admin.page_context(request, title="Review inbox", **inbox_context(request))
    return TemplateResponse(request, "admin/sessions_app/review_inbox.html", context)


def _plan_session(plan_id: str) -> str:
    session_name = admin_reads.session_of_plan(plan_id) if is_plan_id(plan_id) else None
    if session_name is None:
        raise Http404("No such plan.")
    return session_name


def _plan_action(allowed):
    """A POST-only view that changes one plan, for the users ``allowed`` accepts. The view
    makes one service call for the plan's session and returns what to tell the user; a
    refusal is shown instead, and either way the browser goes back where it came from."""

    def decorate(act):
        @functools.wraps(act)
        def view(request, plan_id: str):
            if not allowed(request.user):
                raise PermissionDenied
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            session_name = _plan_session(plan_id)
            try:
                done = act(request, session_name, plan_id)
            except NotPermitted:
                raise PermissionDenied from None
            except NineplanError as exc:
                messages.error(request, FAILED.format(plan=plan_id, category=exc.category, message=exc.message))
            else:
                messages.success(request, done)
            return redirect_back(request, plan_url(plan_id))

        return view

    return decorate


@_plan_action(can_review)
def decide_view(request, session_name: str, plan_id: str) -> str:
    decision = request.POST.get("decision", "")
    written = services.plan_review(
        session_name=session_name,
        plan_id=plan_id,
        decision=decision,
        notes=request.POST.get("notes", ""),
        actor=actor_for(request.user),
    )
    if decision == "approve":
        return APPROVED.format(plan=plan_id)
    return (HELD if written.plan.status == Plan.Status.HELD else REJECTED).format(plan=plan_id)


def restore_view(request, plan_id: str):
    """Restore a revision. A plan a worker holds is asked about first: the page names the
    worker and what it will be told, and only its own form (``confirmed``) restores."""
    if not can_intervene(request.user):
        raise PermissionDenied
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    plan = admin_reads.plan_for_restore(plan_id) if is_plan_id(plan_id) else None
    if plan is None:
        raise Http404("No such plan.")
    if not access.current().allows(access.MANAGE, plan.project):
        raise PermissionDenied
    raw = request.POST.get("revision", "")
    if plan.status == Plan.Status.ACTIVE and request.POST.get("confirmed") != "yes":
        context = {
            **admin.site.each_context(request),
            "title": f"Restore plan {plan.id} to revision {raw}?",
            "plan": plan,
            "revision": raw,
            "next": request.POST.get("next", ""),
            "opts": Plan._meta,
        }
        return TemplateResponse(request, "admin/sessions_app/plan/restore_confirmation.html", context)
    return _restore(request, plan_id)


@_plan_action(can_intervene)
def _restore(request, session_name: str, plan_id: str) -> str:
    raw = request.POST.get("revision", "")
    number = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 10 else raw
    services.plan_restore(session_name=session_name, plan_id=plan_id, number=number, actor=actor_for(request.user))
    return RESTORED.format(plan=plan_id, number=number)


@_plan_action(can_intervene)
def release_view(request, session_name: str, plan_id: str) -> str:
    services.plan_release(session_name=session_name, plan_id=plan_id, actor=actor_for(request.user))
    return RELEASED.format(plan=plan_id)


def policy_view(request, name: str):
    if not can_intervene(request.user):
        raise PermissionDenied
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not is_session_name(name):
        raise Http404("No such session.")
    value = request.POST.get("review", "")
    try:
        services.session_set_review(session_name=name, review=value, actor=actor_for(request.user))
    except NotPermitted:
        raise PermissionDenied from None
    except SessionNotFound:
        raise Http404("No such session.") from None
    except NineplanError as exc:
        messages.error(request, f"Session {name}: {exc.category}: {exc.message}")
    else:
        messages.success(request, POLICY.format(session=name, review=value))
    return HttpResponseRedirect(session_url(name))


POLICY_CHOICES = ReviewPolicy.choices
