"""What a person lets an OAuth client do (the consent page), and taking it back (the
admin's "Connected apps"). A client gets at most its person's rights: a role the person's
own role covers, in projects the person is a member of."""

from __future__ import annotations

import logging

from django.utils import timezone

from sessions_app import access
from sessions_app.errors import NotPermitted, ValidationFailed
from sessions_app.models import Consent, Membership, Project, Role
from sessions_app.oauth.tokens import roles_allowed
from sessions_app.store import transactions

log = logging.getLogger("nineplan.services")


def consent_check(*, user, projects: list[str], role: str) -> list[str]:
    """The chosen projects, sorted, if ``user`` may give a client ``role`` in each; else
    the refusal (before anything is written, or any code made)."""
    chosen = sorted({p for p in projects if isinstance(p, str)})
    if not chosen or len(chosen) != len(projects):
        raise ValidationFailed("projects: choose at least one project.", field="projects")
    if role not in Role.values:
        raise ValidationFailed(f"role: choose one of {', '.join(Role.values)}.", field="role")
    own: dict[str, str]
    if user.is_superuser:
        own = dict.fromkeys(Project.objects.filter(name__in=chosen).values_list("name", flat=True), Role.MANAGER)
    else:
        own = dict(Membership.objects.filter(user=user, project__in=chosen).values_list("project_id", "role"))
    for project in chosen:
        if project not in own:
            raise ValidationFailed(f"projects: you are not a member of '{project}'.", field="projects")
        if role not in roles_allowed(own[project], superuser=user.is_superuser):
            raise NotPermitted(
                f"role: your role in '{project}' is {own[project]}; a client can be given that role or reader. "
                "Nothing was changed.",
                field="role",
            )
    return chosen


def consent_give(*, user, application, projects: list[str], role: str) -> Consent:
    """Lets ``application`` act as ``user`` with ``role`` in ``projects`` (replacing what it
    was let do before); refused, changing nothing, beyond the person's own rights."""
    chosen = consent_check(user=user, projects=projects, role=role)
    now = timezone.now()
    with transactions.write():
        consent, _ = Consent.objects.update_or_create(
            user=user, application=application, defaults={"role": role, "updated_at": now}
        )
        consent.projects.set(chosen)  # type: ignore[arg-type]
    log.info("oauth client consented", extra={"consent": consent.id, "role": role, "projects": chosen})
    return consent


def consent_revoke(*, consent_id: int, by) -> str:
    """Takes back a client's access: its consent and every token it holds for the person go,
    so its next request is refused. For the person, a manager of one of its projects, or a
    superuser; anyone else is told it does not exist."""
    from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

    consent = Consent.objects.select_related("application").filter(id=consent_id).first()
    if consent is None or not consent_visible(consent, by):
        raise ValidationFailed(f"No connected app {consent_id}.", field="consent")
    name = consent.application.name or consent.application.client_id
    with transactions.write():
        tokens = {"user_id": consent.user_id, "application_id": consent.application_id}
        get_refresh_token_model().objects.filter(**tokens, revoked__isnull=True).update(revoked=timezone.now())
        get_access_token_model().objects.filter(**tokens).delete()
        get_grant_model().objects.filter(**tokens).delete()
        Consent.objects.filter(id=consent.id).delete()
    log.info("oauth client revoked", extra={"consent": consent_id})
    return name


def consent_visible(consent: Consent, by) -> bool:
    """Whether ``by`` (a signed-in person) sees and may revoke ``consent``."""
    if by.is_superuser or consent.user_id == by.pk:
        return True
    caller = access.caller_for_user(by)
    return any(caller.allows(access.MANAGE, p) for p in consent.projects.values_list("name", flat=True))


def consents_visible(by):
    """The consents ``by`` sees: their own, their managed projects', or (a superuser) all."""
    found = Consent.objects.select_related("user", "application").prefetch_related("projects")
    if by.is_superuser:
        return found
    caller = access.caller_for_user(by)
    managed = [p for p, role in caller.roles.items() if role == Role.MANAGER]
    from django.db.models import Q

    return found.filter(Q(user=by) | Q(projects__name__in=managed)).distinct()


def tokens_sweep() -> None:
    """Deletes expired OAuth access tokens, authorization codes and refresh tokens
    (django-oauth-toolkit's own sweep; `cleartokens` runs the same by hand)."""
    from oauth2_provider.models import clear_expired

    clear_expired()
