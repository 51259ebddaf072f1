"""The reviewers' side of the review gate in the admin: the review inbox, approve and reject
on the inbox and the plan page, a plan's revisions with their diffs, restoring one, and a
session's review policy.

Reading is open to every reviewer; deciding needs the review permission (``can_review``),
restoring and changing the policy the staff permission (``can_intervene``). Each change is
one service call (sessions_app/review.py) with the staff user as the actor.
"""

from __future__ import annotations

import functools

from django.contrib import messages
from django.db.models import F
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path

from sessions_app import access, queries, revisions, services
from sessions_app.admin import reads as admin_reads
from sessions_app.admin.base import plan_url, redirect_back, session_url
from sessions_app.admin.roles import actor_for, can_intervene, can_review, can_view
from sessions_app.errors import NineplanError, NotPermitted, SessionNotFound
from sessions_app.identifiers import is_plan_id, is_session_name
from sessions_app.models import SECTION_TITLES, Event, Plan, ReviewPolicy

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
    pulled = Event.objects.filter(plan_id=plan.id, kind=Event.Kind.PLAN_PULLED).order_by("-id").first()
    rows = revisions.since(plan, pulled.created_at if pulled else None)
    return [
        f"r{r.number} {r.kind} by {r.actor}: {', '.join(SECTION_TITLES.get(s, s) for s in r.sections) or '—'}"
        for r in rows
    ]


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
    }


def inbox_view(model_admin, request):
    if not can_view(request.user):
        raise PermissionDenied
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    waiting = queries.visible_plans().filter(status=Plan.Status.IN_REVIEW).order_by("updated_at", "id")
    total = waiting.count()
    caller = access.caller_for_user(request.user)
    rows = [
        {
            "plan": p,
            "changed": _changed_since_pulled(p),
            "can_review": can_review(request.user) and caller.allows(access.REVIEW, p.project),
        }
        for p in waiting.annotate(project=F("session__project_id"))[:INBOX_SHOWN]
    ]
    context = model_admin.page_context(
        request,
        title="Review inbox",
        rows=rows,
        total=total,
        can_review=any(row["can_review"] for row in rows),
        here=request.get_full_path(),
    )
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


@_plan_action(can_intervene)
def restore_view(request, session_name: str, plan_id: str) -> str:
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
