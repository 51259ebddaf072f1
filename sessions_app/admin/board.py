"""A session's board: its plans in columns (ready in queue order, blocked with what they
wait for, active with worker and lease left, in review, held, waiting for a person, the
last completed), live like the home, with the picture of its dependencies beside it
(dependency_graph.py). A manager drags a queued card to another place in the queue, or
onto "discard" with a reason; the keyboard does the same (a card focused, Alt+Up or
Alt+Down, or its buttons). Each change is one service call with the user as the actor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, JsonResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.safestring import mark_safe

from sessions_app import services
from sessions_app.admin import dependency_graph
from sessions_app.admin.model_admin import redirect_back
from sessions_app.admin.roles import actor_for, can_intervene, can_view
from sessions_app.errors import NineplanError, NotPermitted, SessionNotFound
from sessions_app.identifiers import is_session_name
from sessions_app.models import Plan
from sessions_app.reads import board as board_reads

MOVED = "Moved plan {plan} {where}."
DISCARDED = "Discarded plan {plan}."
FAILED = "Plan {plan}: {category}: {message}"

# The columns: name, title, what a card there is, and whether its cards are queued (moved by drag).
COLUMNS = (
    ("ready", "Ready", "queued, nothing to wait for: pulled in this order", True),
    ("blocked", "Blocked", "queued, waiting for the plans named to complete", True),
    ("active", "Active", "held by a worker, with its lease left", False),
    ("in_review", "In review", "completed by its agent, waiting for a reviewer", False),
    ("held", "Held", "rejected too many times: waits until a manager releases or discards it", False),
    ("waiting", "Waiting", "its claims ran out: waits for a person", True),
    ("completed", "Completed", "the last completed, newest first", False),
)
# The live parts of a board (sessions_app/admin/live.py), each the template of the cards
# of one column, or of the picture.
LIVE_PARTS = {
    f"board-{name}": f"admin/sessions_app/live/board_{name}.html"
    for name in ("ready", "blocked", "active", "in_review", "held", "waiting", "completed", "graph")
}


def urls(model_admin) -> list:
    wrap = model_admin.admin_site.admin_view
    return [
        path("<str:name>/board/", wrap(lambda r, name: board_view(model_admin, r, name)), name="sessions_app_board"),
        path("<str:name>/board/move/", wrap(move_view), name="sessions_app_board_move"),
        path("<str:name>/board/discard/", wrap(discard_view), name="sessions_app_board_discard"),
    ]


def _node_state(plan: Plan, blocked: set[str]) -> str:
    if plan.waiting_for_person:
        return "waiting"
    return "blocked" if plan.id in blocked else plan.status


def live_context(request, name: str) -> dict:
    """What the board's live parts show, in a fixed number of queries however many plans."""
    found = board_reads.board(name)
    queue = [c.plan.id for c in sorted((*found.ready, *found.blocked, *found.waiting), key=_queue_key)]
    # For the keyboard and the buttons: the plan to move before, one place up or down.
    up = {p: (queue[i - 1] if i > 0 else "") for i, p in enumerate(queue)}
    down = {p: (queue[i + 2] if i + 2 < len(queue) else "back") for i, p in enumerate(queue[:-1])}
    # Where "just after this plan" is: before the next one, or the back.
    after = {p: (queue[i + 1] if i + 1 < len(queue) else "back") for i, p in enumerate(queue)}
    blocked = {c.plan.id for c in found.blocked}
    nodes = [
        dependency_graph.Node(p.id, _node_state(p, blocked), p.goal)
        for p in sorted(found.nodes.values(), key=lambda p: (p.created_at, p.id))
    ]
    managing = can_intervene(request.user, found.session)

    def cards(column, *, movable: bool = False) -> list[dict]:
        return [
            {
                "plan": c.plan,
                "age": found.now - c.plan.created_at,
                "waits_for": c.waits_for,
                "lease_left": (c.plan.lease_expires_at - found.now) if c.plan.lease_expires_at else None,
                "expired": c.plan.lease_expires_at is not None and c.plan.lease_expires_at < found.now,
                "movable": movable and managing,
                "up": up.get(c.plan.id, ""),
                "down": down.get(c.plan.id, ""),
                "after": after.get(c.plan.id, ""),
            }
            for c in column
        ]

    columns = {
        "ready": cards(found.ready, movable=True),
        "blocked": cards(found.blocked, movable=True),
        "active": cards(found.active),
        "in_review": cards(found.in_review),
        "held": cards(found.held),
        "waiting": cards(found.waiting, movable=True),
        "completed": cards(found.completed),
    }
    return {
        "session": found.session,
        "columns": columns,
        "board_columns": [
            {
                "name": name,
                "title": title,
                "help": help_text,
                "queued": queued,
                "count": len(columns[name]),
                "template": LIVE_PARTS[f"board-{name}"],
            }
            for name, title, help_text, queued in COLUMNS
        ],
        "queue_length": found.queue_length,
        "queued_hidden": found.queued_hidden,
        # Built by dependency_graph.svg, which escapes every text it puts in.
        "graph": mark_safe(dependency_graph.svg(nodes, found.edges)),
        "graph_hidden": found.graph_hidden,
        "graph_size": len(nodes),
        "can_manage": managing,
        "here": reverse("admin:sessions_app_board", args=[found.session.name]),
        "move_url": reverse("admin:sessions_app_board_move", args=[found.session.name]),
        "live_counts": {f"board-{k}": len(v) for k, v in columns.items()} | {"board-queued": found.queue_length},
    }


def _queue_key(card) -> int:
    return card.plan.sort_key


def board_view(model_admin, request, name: str):
    if not can_view(request.user):
        raise PermissionDenied
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    if not is_session_name(name):
        raise Http404("No such session.")
    try:
        context = live_context(request, name)
    except SessionNotFound:
        raise Http404("No such session.") from None
    page = model_admin.page_context(request, title=f"Board of {name}", **context)
    return TemplateResponse(request, "admin/sessions_app/board.html", page)


def _answer(request, name: str, ok: bool, text: str):
    """A move asked by the board's script is answered in JSON; a form's goes back."""
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"ok": ok, "message": text}, status=200 if ok else 400)
    (messages.success if ok else messages.error)(request, text)
    return redirect_back(request, reverse("admin:sessions_app_board", args=[name]))


def _acted(request, name: str, plan_id: str, act, done: Callable[[Any], str]):
    """A manager's board action on ``plan_id``: only by POST, from someone who may
    intervene; ``act()`` calls the service, and ``done`` words its result. A refusal by the
    service is answered with its category and message, nothing changed."""
    if not can_intervene(request.user):
        raise PermissionDenied
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not is_session_name(name):
        raise Http404("No such session.")
    try:
        result = act()
    except NotPermitted:
        raise PermissionDenied from None
    except SessionNotFound:
        raise Http404("No such session.") from None
    except NineplanError as exc:
        return _answer(request, name, False, FAILED.format(plan=plan_id, category=exc.category, message=exc.message))
    return _answer(request, name, True, done(result))


def move_view(request, name: str):
    """Moves a queued plan: ``before`` another queued plan, or to ``position`` front or back."""
    plan_id = request.POST.get("plan_id", "")
    before = request.POST.get("before") or None
    position = request.POST.get("position") or None
    if before == "back":
        before, position = None, "back"
    where = f"before plan {before}" if before else f"to the {position or 'back'} of the queue"
    return _acted(
        request,
        name,
        plan_id,
        lambda: services.plan_move(
            session_name=name, plan_id=plan_id, position=position, before=before, actor=actor_for(request.user)
        ),
        lambda written: MOVED.format(plan=plan_id, where=where) + f" It is number {written.place}.",
    )


def discard_view(request, name: str):
    plan_id = request.POST.get("plan_id", "")
    return _acted(
        request,
        name,
        plan_id,
        lambda: services.plan_discard_any(
            session_name=name, plan_id=plan_id, reason=request.POST.get("reason", ""), actor=actor_for(request.user)
        ),
        lambda _: DISCARDED.format(plan=plan_id),
    )
