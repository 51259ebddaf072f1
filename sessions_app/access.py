"""Who may see and do what (docs/design.md, "Projects and access").

Every session belongs to a project, and a user is a member of a project with one role:
``reader`` sees its sessions, plans, events and history; ``agent`` is a reader that may use
every MCP tool; ``reviewer`` is a reader that may approve and reject; ``manager`` is a
reviewer that may also take the staff actions, put work in as an agent does (sessions, plans,
a queued plan's text) and keep the project's members and webhooks.
Superusers, and the local user who owns the local database (stdio, or HTTP on loopback
without a token), see and do everything.

Each edge says once, per request, who is calling (``acting_as``): the MCP tools from the
bearer token (or the local user), the admin and the REST API from the signed-in user. The
service layer's ways in to a session (services/write_kit.py) and ``queries.get_session``
then ask ``require``, and lists and searches are narrowed to ``visible_projects``: no edge
checks rights of its own, so a new tool or page cannot forget them.

The role table is a rule set of django-rules (its permission names, ``nineplan.view`` and
the others, also answer Django's ``user.has_perm(name, obj)`` through its backend, for the
admin and the templates).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import rules

from sessions_app.errors import NotPermitted, SessionNotFound
from sessions_app.models import Role

VIEW = "nineplan.view"
WORK = "nineplan.work"
REVIEW = "nineplan.review"
MANAGE = "nineplan.manage"
# Putting work in: a new session, new plans, a queued plan's text corrected. An agent does
# it as it works; a manager, a person or an integration in the project, does it for them.
ADD = "nineplan.add"

# Which roles may do what; superusers and the local user may do everything.
ROLES_FOR = {
    VIEW: (Role.READER, Role.AGENT, Role.REVIEWER, Role.MANAGER),
    WORK: (Role.AGENT,),
    REVIEW: (Role.REVIEWER, Role.MANAGER),
    MANAGE: (Role.MANAGER,),
    ADD: (Role.AGENT, Role.MANAGER),
}
# The role to name when a caller lacks the right to do something.
ROLE_NEEDED = {WORK: Role.AGENT, REVIEW: Role.REVIEWER, MANAGE: Role.MANAGER, ADD: f"{Role.AGENT}' or '{Role.MANAGER}"}
WHAT = {
    WORK: "use the agents' tools on",
    REVIEW: "approve or reject plans of",
    MANAGE: "manage",
    ADD: "put work into",
}


@dataclass(frozen=True)
class Caller:
    """Who is calling: what the events name (``label``), which projects it may see and with
    which role, and whose workers it acts for (``claimant``: "" for the local user,
    "token:<id>" for a bearer token, so two tokens never share a worker).

    ``everything``: a superuser or the local user, who may do everything, in every project
    or (a superuser's token narrowed to some projects) in ``within`` only."""

    label: str
    everything: bool = False
    roles: Mapping[str, str] = field(default_factory=dict)
    within: frozenset[str] | None = None
    claimant: str = ""

    def allows(self, need: str, project: str) -> bool:
        if self.everything and (self.within is None or project in self.within):
            return True
        return self.roles.get(project) in ROLES_FOR[need]

    def visible_projects(self) -> frozenset[str] | None:
        """The projects this caller may see; None for every project."""
        if self.everything and self.within is None:
            return None
        return frozenset(self.roles) | (self.within or frozenset())

    def allows_anything(self) -> bool:
        """Whether this caller may see any project at all."""
        return self.everything or bool(self.roles)

    def projects_allowing(self, need: str) -> list[str]:
        """The projects (known by name) in which this caller may do ``need``, sorted."""
        return sorted(p for p in self.visible_projects() or () if self.allows(need, p))


# The local user: the stdio MCP server, the HTTP one on loopback without a token, the
# management commands and the server's own background work.
LOCAL = Caller(label="agent", everything=True)

_current: contextvars.ContextVar[Caller | Callable[[], Caller] | None] = contextvars.ContextVar(
    "nineplan_caller", default=None
)
# In a process that serves requests (the web app, the MCP server, the test suite), a call
# that nobody said the caller of is refused; elsewhere (a script or a shell of the
# operator's, on the server's own database) it is the local user's.
_strict = False


def serve_requests() -> None:
    """From now on every call must say who is calling (``acting_as``): for a process that
    serves requests, where a forgotten caller must fail rather than get every right."""
    global _strict
    _strict = True


@contextmanager
def acting_as(caller: Caller | Callable[[], Caller]) -> Iterator[None]:
    """Everything inside runs for ``caller``; a function is called the first time the
    caller is needed (a web request's user is known only once it is authenticated)."""
    token = _current.set(caller)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> Caller:
    """The caller of the running request. An edge that forgot to say who is calling gets an
    error here, never somebody else's rights."""
    found = _current.get()
    if found is None:
        if not _strict:
            return LOCAL
        raise LookupError("no caller: every edge names who is calling with access.acting_as()")
    if not isinstance(found, Caller):
        found = found()
        _current.set(found)
    return found


def require(need: str, *, project: str, session_name: str) -> None:
    """The caller may ``need`` in the session's project. A session the caller may not even
    see is not found, with the same answer as a session that does not exist; one it sees
    but may not change is PERMISSION_DENIED, naming the project and the role it needs."""
    caller = current()
    if not caller.allows(VIEW, project):
        raise SessionNotFound.named(session_name)
    if need != VIEW and not caller.allows(need, project):
        raise NotPermitted.lacking(project=project, role=ROLE_NEEDED[need], what=WHAT[need])


def projects_where(need: str) -> frozenset[str] | None:
    """The projects in which the caller may ``need`` (None: every project): what a list of
    things only some roles may see (webhook subscriptions, for managers) is narrowed to."""
    caller = current()
    if caller.everything and caller.within is None:
        return None
    return frozenset(p for p in caller.visible_projects() or () if caller.allows(need, p))


def require_in_project(need: str, project: str) -> None:
    """The caller may ``need`` in ``project`` (a new session there, a member, a webhook)."""
    caller = current()
    if not caller.allows(need, project):
        raise NotPermitted.lacking(project=project, role=ROLE_NEEDED.get(need, Role.READER), what=WHAT.get(need, "see"))


# --- Django users ---------------------------------------------------------------------------


def caller_for_user(user) -> Caller:
    """The caller a signed-in Django user is: its memberships, read once per request (one
    query, kept on the user object, which lives as long as the request)."""
    cached = getattr(user, "_nineplan_caller", None)
    if cached is not None:
        return cached
    if user is None or not user.is_authenticated or not user.is_active:
        caller = Caller(label="anonymous")
    elif user.is_superuser:
        caller = Caller(label=f"user:{user.get_username()}", everything=True)
    else:
        from sessions_app.models import Membership

        roles = dict(Membership.objects.filter(user_id=user.pk).values_list("project_id", "role"))
        caller = Caller(label=f"user:{user.get_username()}", roles=roles)
    if user is not None:
        user._nineplan_caller = caller
    return caller


def remember_caller(user, caller: Caller) -> None:
    """``user`` acts as ``caller`` for the rest of its request: a token narrower than its
    person (an OAuth client's) gives the request no more than the token's rights."""
    user._nineplan_caller = caller


def _caller(who) -> Caller:
    return who if isinstance(who, Caller) else caller_for_user(who)


def _project_of(target) -> str | None:
    from sessions_app.models import Plan, Project, Session

    if isinstance(target, str):
        return target
    if isinstance(target, Project):
        return target.name
    if isinstance(target, Session):
        return target.project_id
    if isinstance(target, Plan):
        return target.session.project_id
    return None


def _permission(need: str):
    @rules.predicate(name=need)
    def check(who, target=None) -> bool:
        caller = _caller(who)
        project = _project_of(target)
        if project is None:  # "anywhere": may this caller do it in some project?
            return caller.everything or any(caller.allows(need, p) for p in caller.roles)
        return caller.allows(need, project)

    return check


for _need in ROLES_FOR:
    rules.set_perm(_need, _permission(_need))


class CallerMiddleware:
    """Admin pages and REST views run for their request's user (signed in by a session, or
    by a REST token once the view has authenticated it)."""

    def __init__(self, get_response):
        self.get_response = get_response
        serve_requests()

    def __call__(self, request):
        with acting_as(lambda: caller_for_user(getattr(request, "user", None))):
            return self.get_response(request)
