"""`manage.py nineplan_mcp_token create NAME --user USER [--project P ...] | list | revoke NAME`:
bearer tokens for the MCP HTTP transport. A token carries its user's roles in the user's
projects, narrowed to the projects named with --project.

`create` prints the new token alone on stdout (so `TOKEN=$(manage.py nineplan_mcp_token
create laptop)` works) and says on stderr that it is shown only this once.
"""

from __future__ import annotations

from django.core.management.base import CommandError

from mcp_bridge import auth
from sessions_app.management.person_command import PersonCommand


class Command(PersonCommand):
    help = (
        "Create, list or revoke the tokens of MCP clients over HTTP. They are the bearer tokens that MCP clients send to "
        "`manage.py mcp --transport http`."
    )

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="{create,list,revoke}")
        create = actions.add_parser("create", help="make a token and print it (only this once)")
        create.add_argument("name", help="who or what will use it, e.g. 'build-server' or 'alice@laptop'")
        create.add_argument("--user", required=True, help="the user whose roles the token carries")
        create.add_argument(
            "--project",
            action="append",
            default=[],
            metavar="PROJECT",
            help="narrow the token to this project of the user's (repeat for several; default: all of them)",
        )
        actions.add_parser("list", help="show every token's name, status, creation and last use (never the token)")
        revoke = actions.add_parser("revoke", help="stop the active token of that name from working")
        revoke.add_argument("name")

    def handle(self, *args, action: str, name: str = "", user=None, project=(), **options):
        try:
            if action == "create":
                token = auth.token_create(name=name, user=user, projects=project)
                self.stdout.write(token)
                scope = f"projects {', '.join(sorted(set(project)))}" if project else "every project of theirs"
                self.stderr.write(
                    f"Created MCP token '{name}' for '{user}' ({scope}). It is shown only this once: give it to the "
                    "client as 'Authorization: Bearer <token>'."
                )
            elif action == "revoke":
                auth.token_revoke(name=name)
                self.stderr.write(f"Revoked MCP token '{name}': its next request gets 401.")
            else:
                rows = [auth.describe(t) for t in auth.token_list()]
                if not rows:
                    self.stderr.write("No MCP tokens yet; create one with `nineplan_mcp_token create NAME`.")
                    return
                widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in rows[0]}
                self.stdout.write("  ".join(k.upper().ljust(w) for k, w in widths.items()).rstrip())
                for row in rows:
                    self.stdout.write("  ".join(row[k].ljust(w) for k, w in widths.items()).rstrip())
        except auth.TokenError as exc:
            raise CommandError(str(exc)) from exc
