"""Projects: every session belongs to one, and users are members of projects with a role.

Every session there is goes into a project named ``default``. Staff who could see or change
9plan's data through Django's permissions keep what they could do there, as members of
``default``: the ``change_plan`` permission becomes the manager role, ``review_plan`` the
reviewer role, and the view permissions (the ``reviewers`` group) the reader role.

A worker is now its name within its claimant (the local user, or a token): the claim
constraints take the claimant in. On SQLite that rebuilds the plan table, which drops its
triggers: they are put back at the end, as 0007 and 0008 do.
"""

from importlib import import_module

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

# The triggers of 0004 and 0006, put back as 0007 puts them back.
restore_triggers = import_module("sessions_app.migrations.0007_workers_leases").restore_triggers

DEFAULT_PROJECT = "default"


def drop_count_triggers(apps, schema_editor):
    """On the way back: SQLite rebuilds the session table to drop its project, and refuses
    to while the plan table's counting triggers name it; they are put back at the end."""
    if schema_editor.connection.vendor == "sqlite":
        counts = import_module("sessions_app.migrations.0004_plan_counters")
        for name in counts.SQLITE_TRIGGER_NAMES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")


def create_default_project(apps, schema_editor):
    Project = apps.get_model("sessions_app", "Project")
    Project.objects.get_or_create(name=DEFAULT_PROJECT, defaults={"title": "Default project"})


def keep_staff_access(apps, schema_editor):
    """Each staff user who held 9plan's Django permissions becomes a member of ``default``."""
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    Membership = apps.get_model("sessions_app", "Membership")
    Permission = apps.get_model("auth", "Permission")
    codes = {
        p.id: p.codename
        for p in Permission.objects.filter(
            content_type__app_label="sessions_app",
            codename__in=["change_plan", "review_plan", "view_plan", "view_session", "view_event"],
        )
    }
    for user in User.objects.filter(is_staff=True, is_superuser=False):
        held = {codes[i] for i in user.user_permissions.values_list("id", flat=True) if i in codes}
        for group in user.groups.all():
            held |= {codes[i] for i in group.permissions.values_list("id", flat=True) if i in codes}
        role = (
            "manager" if "change_plan" in held else "reviewer" if "review_plan" in held else "reader" if held else None
        )
        if role:
            Membership.objects.get_or_create(project_id=DEFAULT_PROJECT, user_id=user.pk, defaults={"role": role})


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0008_review_revisions"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # Runs last on the way back, once the session table is as it was.
        migrations.RunPython(migrations.RunPython.noop, restore_triggers),
        migrations.CreateModel(
            name="Project",
            fields=[
                ("name", models.CharField(max_length=63, primary_key=True, serialize=False)),
                ("title", models.CharField(blank=True, default="", max_length=200)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.RunPython(create_default_project, migrations.RunPython.noop),
        migrations.CreateModel(
            name="Membership",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "role",
                    models.CharField(
                        choices=[
                            ("reader", "Reader"),
                            ("agent", "Agent"),
                            ("reviewer", "Reviewer"),
                            ("manager", "Manager"),
                        ],
                        max_length=10,
                    ),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "ordering": ["project", "user"],
            },
        ),
        migrations.RemoveConstraint(
            model_name="lostclaim",
            name="lost_claim_one_per_worker",
        ),
        migrations.RemoveConstraint(
            model_name="plan",
            name="plan_one_active_per_worker",
        ),
        migrations.AddField(
            model_name="lostclaim",
            name="claimant",
            field=models.CharField(blank=True, db_default="", default="", max_length=32),
        ),
        migrations.AddField(
            model_name="plan",
            name="claimant",
            field=models.CharField(blank=True, db_default="", default="", max_length=32),
        ),
        migrations.AddConstraint(
            model_name="lostclaim",
            constraint=models.UniqueConstraint(
                fields=("session", "claimant", "worker"), name="lost_claim_one_per_worker"
            ),
        ),
        migrations.AddConstraint(
            model_name="plan",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "active")),
                fields=("session", "claimant", "worker"),
                name="plan_one_active_per_worker",
            ),
        ),
        migrations.AddField(
            model_name="membership",
            name="user",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="nineplan_memberships",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="membership",
            name="project",
            field=models.ForeignKey(
                db_column="project_name",
                on_delete=django.db.models.deletion.CASCADE,
                related_name="memberships",
                to="sessions_app.project",
            ),
        ),
        migrations.AddField(
            model_name="session",
            name="project",
            field=models.ForeignKey(
                db_column="project_name",
                db_default="default",
                default="default",
                on_delete=django.db.models.deletion.PROTECT,
                related_name="sessions",
                to="sessions_app.project",
            ),
        ),
        migrations.AddConstraint(
            model_name="membership",
            constraint=models.UniqueConstraint(fields=("project", "user"), name="membership_one_role_per_project"),
        ),
        migrations.AddConstraint(
            model_name="membership",
            constraint=models.CheckConstraint(
                condition=models.Q(("role__in", ["reader", "agent", "reviewer", "manager"])),
                name="membership_role_valid",
            ),
        ),
        migrations.RunPython(keep_staff_access, migrations.RunPython.noop),
        migrations.RunPython(restore_triggers, drop_count_triggers),
    ]
