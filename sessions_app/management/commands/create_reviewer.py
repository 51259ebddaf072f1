"""`manage.py create_reviewer NAME [--can-approve] [--project NAME] [--set-password]`: a login
that reads a project's sessions in the admin and changes nothing (the reader role), or (with
--can-approve) also approves and rejects its plans in review (the reviewer role). Run on an
existing user, it grants what is missing and keeps the rest, its password and any stronger
role too."""

from __future__ import annotations

import getpass
import os
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.db import transaction

from sessions_app import services
from sessions_app.admin.roles import REVIEWERS_GROUP, ensure_reviewers_group
from sessions_app.errors import NineplanError
from sessions_app.management.person_command import PersonCommand
from sessions_app.models import DEFAULT_PROJECT, Membership, Role

PASSWORD_ENV = "NINEPLAN_REVIEWER_PASSWORD"


class Command(PersonCommand):
    help = (
        "Create a reviewer login, or make an existing user one. A reviewer is a staff login with the reader "
        "role in a project (the reviewer role with --can-approve): it views the project's sessions, plans, "
        "history and events and changes nothing but, with --can-approve, the review decisions. "
        f"A new user's password comes from {PASSWORD_ENV} if set, otherwise from a prompt; an existing user keeps "
        "theirs unless --set-password is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the reviewer's username")
        parser.add_argument("--email", default="", help="optional e-mail address")
        parser.add_argument(
            "--can-approve",
            action="store_true",
            help="the reviewer role: also approve or reject plans in review (admin and REST API)",
        )
        parser.add_argument(
            "--project", default=DEFAULT_PROJECT, help=f"the project the reviewer reads (default '{DEFAULT_PROJECT}')"
        )
        parser.add_argument(
            "--set-password",
            action="store_true",
            help=f"give an existing user a new password (from {PASSWORD_ENV} or a prompt); a new user always gets one",
        )

    def handle(
        self,
        *args,
        name: str,
        email: str,
        can_approve: bool = False,
        set_password: bool = False,
        project: str = DEFAULT_PROJECT,
        **options,
    ):
        User = get_user_model()
        name = name.strip()
        if not name:
            raise CommandError("NAME is empty: give the reviewer's username.")
        existing = User.objects.filter(**{User.USERNAME_FIELD: name}).first()
        if existing is not None:
            self._update(existing, email=email, can_approve=can_approve, set_password=set_password, project=project)
            return
        user = User(**{User.USERNAME_FIELD: name}, email=email, is_staff=True, is_superuser=False)
        password = self._password(user)
        with transaction.atomic():
            group = self._group()
            user.set_password(password)
            user.save()
            user.groups.add(group)
            if can_approve:
                # Granted to the user, not the group: the group stays read-only for everyone else.
                user.user_permissions.add(_review_permission())
            self._grant(project, name, Role.REVIEWER if can_approve else Role.READER)
        role = "may approve and reject plans in review" if can_approve else "reads, changes nothing"
        self.stdout.write(
            f"Created reviewer '{name}' ({'reviewer' if can_approve else 'reader'} in project '{project}': {role}). "
            "Log in at /admin/."
        )

    @staticmethod
    def _grant(project: str, name: str, role: str) -> None:
        try:
            services.project_grant(project=project, username=name, role=role)
        except NineplanError as exc:
            raise CommandError(f"{exc.message} Nothing was changed.") from exc

    def _update(self, user, *, email: str, can_approve: bool, set_password: bool, project: str) -> None:
        """Grants what a reviewer needs that the user lacks, keeps everything else (its
        password above all, unless asked), and says on stderr what it did."""
        name = user.get_username()
        password = self._password(user) if set_password else None
        done: list[str] = []
        kept = [] if password is not None else ["its password"]
        with transaction.atomic():
            group = self._group()
            if not user.is_staff:
                user.is_staff = True
                done.append("made it staff, so that it may log in to the admin")
            if email and email != user.email:
                user.email = email
                done.append(f"set its e-mail to {email}")
            if password is not None:
                user.set_password(password)
                done.append("set its new password")
            if done:
                user.save()
            if not user.groups.filter(pk=group.pk).exists():
                user.groups.add(group)
                done.append(f"added it to the group '{REVIEWERS_GROUP}'")
            # A fresh object: has_perm caches what it saw before the group was added.
            if can_approve and not type(user).objects.get(pk=user.pk).has_perm("sessions_app.review_plan"):
                user.user_permissions.add(_review_permission())
            # The role in the project: given when it has none, raised from reader to reviewer
            # with --can-approve, never lowered.
            wanted = Role.REVIEWER if can_approve else Role.READER
            held = Membership.objects.filter(project_id=project, user=user).values_list("role", flat=True).first()
            if held is None or (held in (Role.READER, Role.AGENT) and wanted == Role.REVIEWER):
                self._grant(project, name, wanted)
                done.append(f"made it {wanted} in project '{project}'" + (f" (was {held})" if held else ""))
            elif held != wanted:
                kept.append(f"its role '{held}' in project '{project}'")
        if user.is_superuser:
            kept.append("superuser (it may do everything anyway)")
        if not user.is_active:
            self.stderr.write(f"Warning: '{name}' is inactive and cannot log in; activate it in the admin's user page.")
        said = "; ".join(done) if done else f"it was a reviewer already{' who may approve' if can_approve else ''}"
        self.stderr.write(f"Updated existing user '{name}': {said}. Kept: {', '.join(kept) or 'nothing else to keep'}.")

    @staticmethod
    def _group():
        try:
            return ensure_reviewers_group()
        except LookupError as exc:
            raise CommandError(str(exc)) from exc

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


def _review_permission() -> Permission:
    return Permission.objects.get(content_type__app_label="sessions_app", codename="review_plan")
