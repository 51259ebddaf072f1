"""`manage.py token USERNAME`: print the REST API token of a user (made on first use)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token

from sessions_app import access, services
from sessions_app.errors import NineplanError
from sessions_app.management.person_command import PersonCommand
from sessions_app.models import DEFAULT_PROJECT, Role


class Command(PersonCommand):
    help = (
        "Print a user's REST API token, made on first use. It is USERNAME's token, created if the user has none. "
        "Send it as 'Authorization: Token <key>'; it carries the user's roles in its projects. --create makes "
        "an API-only user (no password, not staff) with the reader role in the projects given with --project "
        "(default: 'default'); --reset replaces an existing token."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--create", action="store_true", help="create the user (read-only, no password) if it does not exist"
        )
        parser.add_argument("--reset", action="store_true", help="revoke the user's current token and make a new one")
        parser.add_argument(
            "--project",
            action="append",
            default=[],
            metavar="PROJECT",
            help="with --create: the project the new user reads (repeat for several; default 'default')",
        )

    def handle(self, *args, username: str, create: bool, reset: bool, project=(), **options):
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
                    for name in project or [DEFAULT_PROJECT]:
                        services.project_grant(project=name, username=username, role=Role.READER)
                except NineplanError as exc:
                    raise CommandError(exc.message) from exc
                # An API-only user: reading the projects' data does not need the admin.
                User.objects.filter(pk=user.pk).update(is_staff=False)
            if not user.is_active:
                raise CommandError(f"User '{username}' is inactive; the API would refuse the token.")
            if reset:
                Token.objects.filter(user=user).delete()
            token, _ = Token.objects.get_or_create(user=user)
        # A fresh object: the roles it was read with may have changed above.
        if not access.caller_for_user(User.objects.get(pk=user.pk)).allows_anything():
            self.stderr.write(
                f"Warning: '{username}' has no role in any project, so the API will answer 403. Grant one with "
                f"`9plan project grant PROJECT {username} reader`."
            )
        self.stdout.write(token.key)
