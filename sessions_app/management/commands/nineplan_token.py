"""`manage.py nineplan_token USERNAME`: print the REST API token of a user (made on first use)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token

from nineplan.commands import PersonCommand
from sessions_app.admin.roles import VIEW_EVENT, VIEW_PLAN, VIEW_SESSION, ensure_reviewers_group


class Command(PersonCommand):
    help = (
        "Print a user's REST API token, made on first use. It is USERNAME's token, created if the user has none. "
        "Send it as 'Authorization: Token <key>'. --create makes an API-only user (no password, not staff) "
        "that may read everything and change nothing; --reset replaces an existing token."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--create", action="store_true", help="create the user (read-only, no password) if it does not exist"
        )
        parser.add_argument("--reset", action="store_true", help="revoke the user's current token and make a new one")

    def handle(self, *args, username: str, create: bool, reset: bool, **options):
        User = get_user_model()
        username = username.strip()
        if not username:
            raise CommandError("USERNAME is empty: give the name of the user who will use the API.")
        with transaction.atomic():
            user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
            if user is None:
                if not create:
                    raise CommandError(
                        f"No user named '{username}'. Create one with --create (read-only API user), "
                        "or with `manage.py create_reviewer`."
                    )
                user = User(**{User.USERNAME_FIELD: username})
                user.set_unusable_password()
                user.save()
                try:
                    user.groups.add(ensure_reviewers_group())
                except LookupError as exc:
                    raise CommandError(str(exc)) from exc
            if not user.is_active:
                raise CommandError(f"User '{username}' is inactive; the API would refuse the token.")
            if reset:
                Token.objects.filter(user=user).delete()
            token, _ = Token.objects.get_or_create(user=user)
        # A fresh object: has_perms caches what it saw before the group was added.
        user = User.objects.get(pk=user.pk)
        if not user.has_perms((VIEW_SESSION, VIEW_PLAN, VIEW_EVENT)):
            self.stderr.write(
                f"Warning: '{username}' lacks the view permissions on sessions, plans and events, so the API "
                "will answer 403. Add the user to the 'reviewers' group (admin) to grant them."
            )
        self.stdout.write(token.key)
