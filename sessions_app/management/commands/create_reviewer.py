"""`manage.py create_reviewer NAME [--can-approve]`: a login that can read every 9plan page and
change nothing, or (with --can-approve) also approve and reject plans in review."""

from __future__ import annotations

import getpass
import os
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.db import transaction

from nineplan.commands import PersonCommand
from django.contrib.auth.models import Permission

from sessions_app.admin.roles import REVIEWERS_GROUP, ensure_reviewers_group

PASSWORD_ENV = "NINEPLAN_REVIEWER_PASSWORD"


class Command(PersonCommand):
    help = (
        f"Create a reviewer: a staff login in the '{REVIEWERS_GROUP}' group, which may view sessions, "
        f"plans, history and events but change nothing. The password comes from {PASSWORD_ENV} if set, "
        "otherwise from a prompt."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the reviewer's username")
        parser.add_argument("--email", default="", help="optional e-mail address")
        parser.add_argument(
            "--can-approve",
            action="store_true",
            help="also grant 'Can review plan': approve or reject plans in review (admin and REST API)",
        )

    def handle(self, *args, name: str, email: str, can_approve: bool = False, **options):
        User = get_user_model()
        name = name.strip()
        if not name:
            raise CommandError("NAME is empty: give the reviewer's username.")
        if User.objects.filter(**{User.USERNAME_FIELD: name}).exists():
            raise CommandError(
                f"A user named '{name}' already exists; nothing was changed. "
                f"Use `manage.py changepassword {name}` to set a new password."
            )
        user = User(**{User.USERNAME_FIELD: name}, email=email, is_staff=True, is_superuser=False)
        password = self._password(user)
        with transaction.atomic():
            try:
                group = ensure_reviewers_group()
            except LookupError as exc:
                raise CommandError(str(exc)) from exc
            user.set_password(password)
            user.save()
            user.groups.add(group)
            if can_approve:
                # Granted to the user, not the group: the group stays read-only for everyone else.
                user.user_permissions.add(
                    Permission.objects.get(content_type__app_label="sessions_app", codename="review_plan")
                )
        role = "view only, may approve and reject plans in review" if can_approve else "view only"
        self.stdout.write(f"Created reviewer '{name}' (group '{REVIEWERS_GROUP}': {role}). Log in at /admin/.")

    def _password(self, user) -> str:
        from_env = os.environ.get(PASSWORD_ENV)
        if from_env is not None:
            self._check(from_env, user, source=PASSWORD_ENV)
            return from_env
        if not self._interactive():
            raise CommandError(f"No password: set {PASSWORD_ENV} or run the command in a terminal to be prompted.")
        for _ in range(3):
            first = getpass.getpass("Password: ")
            if first != getpass.getpass("Password (again): "):
                self.stderr.write("The two passwords differ; try again.")
                continue
            try:
                self._check(first, user, source="password")
            except CommandError as exc:
                self.stderr.write(str(exc))
                continue
            return first
        raise CommandError("No acceptable password after three tries; nothing was changed.")

    @staticmethod
    def _interactive() -> bool:
        return sys.stdin is not None and sys.stdin.isatty()

    @staticmethod
    def _check(password: str, user, *, source: str) -> None:
        if not password:
            raise CommandError(f"{source} is empty; nothing was changed.")
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError(f"{source} is not accepted: {' '.join(exc.messages)} Nothing was changed.") from exc
