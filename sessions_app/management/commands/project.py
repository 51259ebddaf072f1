"""`manage.py project create NAME [--title TITLE] | grant NAME USERNAME ROLE |
revoke NAME USERNAME | list`: projects and who may do what in them.

A role is reader (sees the project's sessions), agent (a reader that may use every MCP
tool), reviewer (a reader that may approve and reject) or manager (a reviewer that may also
take the staff actions and keep the project's members). `grant` creates the user, without a
password, when there is none, and says so on stderr.
"""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db.models import Count

from sessions_app import services
from sessions_app.errors import NineplanError
from sessions_app.management.person_command import PersonCommand
from sessions_app.models import Membership, Project, Role


class Command(PersonCommand):
    help = "Create projects, grant and revoke their members' roles, and list them."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="{create,grant,revoke,list}")
        create = actions.add_parser("create", help="make an empty project")
        create.add_argument("name", help="1 to 63 characters of a-z, 0-9 and '-', e.g. 'billing-team'")
        create.add_argument("--title", default=None, help="a longer name people read")
        grant = actions.add_parser("grant", help="give a user a role in a project (creating the user if needed)")
        grant.add_argument("name", help="the project")
        grant.add_argument("username")
        grant.add_argument("role", help=f"one of: {', '.join(Role.values)}")
        revoke = actions.add_parser("revoke", help="end a user's membership of a project")
        revoke.add_argument("name", help="the project")
        revoke.add_argument("username")
        actions.add_parser("list", help="every project with its sessions and members")

    def handle(self, *args, action: str, **options):
        try:
            if action == "create":
                project = services.project_create(name=options["name"], title=options["title"])
                self.stderr.write(f"Created project '{project.name}'.")
            elif action == "grant":
                granted = services.project_grant(
                    project=options["name"], username=options["username"], role=options["role"]
                )
                user = granted.membership.user.get_username()
                if granted.user_created:
                    self.stderr.write(
                        f"Created user '{user}' without a password (set one with `changepassword {user}` before "
                        "they sign in to the admin)."
                    )
                if granted.previous_role is None:
                    said = f"'{user}' is now {granted.membership.role} in '{options['name']}'."
                elif granted.previous_role == granted.membership.role:
                    said = f"'{user}' was {granted.membership.role} in '{options['name']}' already."
                else:
                    said = f"'{user}' is now {granted.membership.role} in '{options['name']}' (was {granted.previous_role})."
                self.stderr.write(said)
            elif action == "revoke":
                services.project_revoke(project=options["name"], username=options["username"])
                self.stderr.write(
                    f"'{options['username']}' is no longer a member of '{options['name']}'; its next request is refused."
                )
            else:
                self._list()
        except NineplanError as exc:
            raise CommandError(exc.message) from exc

    def _list(self) -> None:
        projects = list(Project.objects.annotate(session_count=Count("sessions")).order_by("name"))
        if not projects:
            self.stderr.write("No projects yet; create one with `9plan project create NAME`.")
            return
        members: dict[str, list[str]] = {}
        for project_id, username, role in Membership.objects.order_by("project_id", "user__username").values_list(
            "project_id", "user__username", "role"
        ):
            members.setdefault(project_id, []).append(f"{username} ({role})")
        for project in projects:
            title = f"  {project.title}" if project.title else ""
            self.stdout.write(f"{project.name}{title}")
            self.stdout.write(f"  sessions: {project.session_count}")
            self.stdout.write(f"  members: {', '.join(members.get(project.name, [])) or 'none'}")
