"""The pages a manager puts work in with: a new session in a project, a plan added to a
session, several at once (pasted plan-file texts or a list), and an open plan's text
edited. Each page is offered to managers (and superusers) only; each submit is one call
of the service an agent's tool calls (session_create, plan_enqueue_many, plan_edit), with
the user as the actor. Bad input gets the form back, the field named, nothing written."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from sessions_app import access, services
from sessions_app.admin import forms
from sessions_app.admin.model_admin import plan_url
from sessions_app.admin.roles import actor_for, can_intervene
from sessions_app.errors import NineplanError, NotPermitted, SessionNotFound
from sessions_app.identifiers import is_plan_id, is_session_name
from sessions_app.models import Plan, Project
from sessions_app.reads import excerpts, queries

CREATED = "Created session {session} in project {project}."
ADDED = "Added plan {plan} to session {session}: number {place} in the queue."
ADDED_MANY = "Added {count} plans to session {session}: {plans}."
EDITED = "Edited plan {plan}'s text (kept as revision {revision})."
# How many of a session's plans the dependency list offers, newest first.
DEPENDENCY_CHOICES = 500


def urls(model_admin) -> list:
    wrap = model_admin.admin_site.admin_view

    def page(view):
        return wrap(lambda request, **kw: view(model_admin, request, **kw))

    return [
        path("new/", page(session_new_view), name="sessions_app_session_new"),
        path("<str:name>/add-plan/", page(plan_add_view), name="sessions_app_plan_add_form"),
        path("<str:name>/add-plans/", page(plan_batch_view), name="sessions_app_plan_batch_form"),
        path("<str:name>/plans/<str:plan_id>/edit/", page(plan_edit_view), name="sessions_app_plan_edit_form"),
    ]


def _check(request, target=None) -> None:
    """Managers (and superusers) only; the service checks the session's project again."""
    if not can_intervene(request.user, target):
        raise PermissionDenied


def _render(model_admin, request, title: str, form, **extra):
    context = model_admin.page_context(request, title=title, form=form, **extra)
    return TemplateResponse(request, "admin/sessions_app/work_form.html", context)


def _managed_projects(request) -> list[str]:
    caller = access.caller_for_user(request.user)
    if caller.everything:
        names = Project.objects.order_by("name").values_list("name", flat=True)
        return [n for n in names if caller.allows(access.MANAGE, n)]
    return caller.projects_allowing(access.MANAGE)


T = TypeVar("T")


def _through(form, call: Callable[[], T], *, default: str | None = None) -> T | None:
    """What the service ``call`` returns, or None with its refusal shown on ``form`` at the
    field it names (``default`` when it names none). A caller the service finds without the
    right is refused the page (403), as when it could not open it."""
    try:
        return call()
    except NotPermitted:
        raise PermissionDenied from None
    except NineplanError as exc:
        forms.show_error(form, exc, default=default)
        return None


def session_new_view(model_admin, request):
    _check(request)
    projects = _managed_projects(request)
    form = forms.SessionForm(request.POST if request.method == "POST" else None, projects=projects)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        session = _through(
            form,
            lambda: services.session_create(
                project=data["project"],
                task_description=data["task_description"] or None,
                review=data["review"],
                lease_seconds=data["lease_seconds"],
                max_attempts=data["max_attempts"],
                actor=actor_for(request.user),
            ),
        )
        if session is not None:
            messages.success(request, CREATED.format(session=session.name, project=session.project_id))
            return HttpResponseRedirect(reverse("admin:sessions_app_board", args=[session.name]))
    return _render(model_admin, request, "New session", form, submit="Create the session")


def _session(request, name: str):
    if not is_session_name(name):
        raise Http404("No such session.")
    try:
        session = queries.get_session(name)
    except SessionNotFound:
        raise Http404("No such session.") from None
    _check(request, session)
    return session


def _dependency_choices(session) -> list[tuple[str, str]]:
    plans = (
        Plan.objects.filter(session_id=session.name)
        .exclude(status=Plan.Status.DISCARDED)
        .order_by("-created_at", "-id")
        .values_list("id", "status", "goal")[:DEPENDENCY_CHOICES]
    )
    return [(i, f"{i} ({status}) {excerpts.one_line(goal, 80)}") for i, status, goal in plans]


def plan_add_view(model_admin, request, name: str):
    session = _session(request, name)
    form = forms.PlanForm(request.POST if request.method == "POST" else None, plans=_dependency_choices(session))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        plan = {s: data[s] for s in forms.NEW_PLAN_SECTIONS}
        if data["depends_on"]:
            plan["depends_on"] = list(data["depends_on"])
        added = _through(
            form,
            lambda: services.plan_enqueue_many(
                session_name=session.name,
                plans=[plan],
                position=data["position"],
                review=data["review"],
                actor=actor_for(request.user),
            ),
        )
        if added is not None:
            written = added[0]
            messages.success(request, ADDED.format(plan=written.plan.id, session=session.name, place=written.place))
            return HttpResponseRedirect(reverse("admin:sessions_app_board", args=[session.name]))
    return _render(model_admin, request, f"Add a plan to {session.name}", form, session=session, submit="Add the plan")


def plan_batch_view(model_admin, request, name: str):
    session = _session(request, name)
    form = forms.BatchForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        written = _through(
            form,
            lambda: services.plan_enqueue_many(
                session_name=session.name,
                plans=forms.plans_from_text(data["text"]),
                position=data["position"],
                review=data["review"],
                actor=actor_for(request.user),
            ),
            default="text",
        )
        if written is not None:
            ids = ", ".join(w.plan.id for w in written)
            messages.success(request, ADDED_MANY.format(count=len(written), session=session.name, plans=ids))
            return HttpResponseRedirect(reverse("admin:sessions_app_board", args=[session.name]))
    return _render(model_admin, request, f"Add plans to {session.name}", form, session=session, submit="Add the plans")


def plan_edit_view(model_admin, request, name: str, plan_id: str):
    session = _session(request, name)
    plan = Plan.objects.filter(session_id=session.name, id=plan_id).first() if is_plan_id(plan_id) else None
    if plan is None:
        raise Http404("No such plan.")
    if request.method == "POST":
        form = forms.EditForm(request.POST)
    else:
        form = forms.EditForm(initial={**plan.sections(), "version": plan.version})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        written = _through(
            form,
            lambda: services.plan_edit(
                session_name=session.name,
                plan_id=plan.id,
                sections={s: data[s] for s in plan.sections()},
                expected_version=data["version"],
                actor=actor_for(request.user),
            ),
        )
        if written is not None:
            revision = written.plan.revisions.order_by("-number").values_list("number", flat=True).first()
            messages.success(request, EDITED.format(plan=plan.id, revision=revision))
            return HttpResponseRedirect(plan_url(plan.id))
    worker_note = (
        f"Plan {plan.id} is active: its worker ({plan.worker}) is told of your edit on its next write and on resume."
        if plan.status == Plan.Status.ACTIVE
        else ""
    )
    if not plan.is_open:
        messages.warning(
            request, f"Plan {plan.id} is {plan.status}: only a queued or active plan's text can be edited."
        )
    return _render(
        model_admin,
        request,
        f"Edit plan {plan.id}",
        form,
        session=session,
        plan=plan,
        note=worker_note,
        submit="Save the text",
        back=plan_url(plan.id),
    )
