"""Who may do what, in the admin and over the REST API: every permission the edges ask
about is named here.

The rights are project roles (sessions_app/access.py): ``VIEW`` for a reader, ``REVIEW``
for a reviewer or manager, ``INTERVENE`` (the staff actions: discard, move, requeue,
restore, release, the review policy) for a manager. Asked without a session or plan, a
permission says whether the user holds it in any project (what decides whether a page or
button is offered at all); the services check it for the session itself, whatever an edge
asked before. Every change goes through the services, never the generic forms.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType

from sessions_app import access
from sessions_app.models import Event, Plan, Session

REVIEWERS_GROUP = "reviewers"
VIEW_PERMISSION = access.VIEW
INTERVENE_PERMISSION = access.MANAGE
# Approving or rejecting a plan in review; plain readers only read.
REVIEW_PERMISSION = access.REVIEW
VIEWED_MODELS = (Session, Plan, Event)


def ensure_reviewers_group() -> Group:
    """The ``reviewers`` group with exactly the view permissions of 9plan's models (Django's
    own: they let its members sign in to the admin; what they see is their projects')."""
    group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
    types = ContentType.objects.get_for_models(*VIEWED_MODELS).values()
    codenames = [f"view_{model._meta.model_name}" for model in VIEWED_MODELS]
    permissions = list(Permission.objects.filter(content_type__in=types, codename__in=codenames))
    if len(permissions) != len(codenames):
        # Permissions are created by migrate's post_migrate handler; without them the
        # group would silently grant nothing.
        raise LookupError("9plan's view permissions are missing; run `manage.py migrate` first.")
    # set() also strips any broader permission someone added by hand: a reviewer never writes.
    group.permissions.set(permissions)
    return group


def can_view(user, target=None) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(VIEW_PERMISSION, target))


def can_intervene(user, target=None) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(INTERVENE_PERMISSION, target))


def can_review(user, target=None) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(REVIEW_PERMISSION, target))


def actor_for(user) -> str:
    """How the event log names a change made by this admin user."""
    return access.caller_for_user(user).label
