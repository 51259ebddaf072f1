"""Who may do what, in the admin and over the REST API: every permission 9plan checks is
named here.

Reviewers read everything and change nothing: their group holds only the ``view_*``
permissions of 9plan's models, the ones the REST API's reads need too. Intervening
(discard, move, requeue) needs the ``change_plan`` permission, and even then goes through
the services, never the generic forms.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType

from sessions_app.models import Event, Plan, Session

REVIEWERS_GROUP = "reviewers"
VIEW_SESSION = "sessions_app.view_session"
VIEW_PLAN = "sessions_app.view_plan"
VIEW_EVENT = "sessions_app.view_event"
INTERVENE_PERMISSION = "sessions_app.change_plan"
# Approving or rejecting a plan in review; plain reviewers only read.
REVIEW_PERMISSION = "sessions_app.review_plan"
VIEWED_MODELS = (Session, Plan, Event)


def ensure_reviewers_group() -> Group:
    """The ``reviewers`` group with exactly the view permissions of 9plan's models."""
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


def can_intervene(user) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(INTERVENE_PERMISSION))


def can_review(user) -> bool:
    return bool(user.is_active and user.is_staff and user.has_perm(REVIEW_PERMISSION))


def actor_for(user) -> str:
    """How the event log names a change made by this admin user."""
    return f"user:{user.get_username()}"
