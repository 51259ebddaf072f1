"""Many workers in one session: claims with leases, lost claims, and dependencies.

"One active plan per session" becomes "one active plan per (session, worker)". A plan that
is active when this runs belongs to the session's default worker, claimed when it was last
written, with a fresh lease of the default length: the agent holding it sees no change.
"""

from datetime import timedelta
from importlib import import_module

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

# Written out, not imported, so that this migration keeps meaning what it meant.
DEFAULT_WORKER = "default"
LEASE_SECONDS = 1800


def restore_triggers(apps, schema_editor):
    """Put back the counting triggers of 0004 and the search triggers of 0006, with those
    migrations' own statements (never the live modules', which may have moved on).

    On SQLite the constraints here rebuild the plan table, which drops its triggers; they
    are put back at once (and again after every migrate), so that a database migrated step
    by step never runs without them."""
    counts = import_module("sessions_app.migrations.0004_plan_counters")
    index = import_module("sessions_app.migrations.0006_search_word_forms")
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for name in index.TRIGGER_NAMES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
        for statement in [*counts.SQLITE_TRIGGERS, *index.SQLITE_TRIGGERS]:
            schema_editor.execute(statement)
    elif vendor == "postgresql":
        for statement in counts.POSTGRES_SCHEMA:
            schema_editor.execute(statement)


def claim_active_plans(apps, schema_editor):
    Plan = apps.get_model("sessions_app", "Plan")
    now = django.utils.timezone.now()
    for plan in Plan.objects.filter(status="active").only("id", "updated_at"):
        Plan.objects.filter(id=plan.id).update(
            worker=DEFAULT_WORKER,
            claimed_at=plan.updated_at,
            lease_expires_at=now + timedelta(seconds=LEASE_SECONDS),
        )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0006_search_word_forms"),
    ]

    operations = [
        migrations.CreateModel(
            name="LostClaim",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("worker", models.CharField(max_length=64)),
                ("lost_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
        migrations.CreateModel(
            name="PlanDependency",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
            ],
        ),
        migrations.RemoveConstraint(
            model_name="plan",
            name="plan_one_active_per_session",
        ),
        migrations.AddField(
            model_name="plan",
            name="attempts",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="plan",
            name="claimed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="plan",
            name="lease_expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="plan",
            name="waiting_for_person",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="plan",
            name="worker",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name="session",
            name="lease_seconds",
            field=models.PositiveIntegerField(db_default=1800, default=1800),
        ),
        migrations.AddField(
            model_name="session",
            name="max_attempts",
            field=models.PositiveIntegerField(db_default=3, default=3),
        ),
        migrations.AlterField(
            model_name="event",
            name="kind",
            field=models.CharField(
                choices=[
                    ("session_created", "Session Created"),
                    ("plan_created", "Plan Created"),
                    ("plan_pulled", "Plan Pulled"),
                    ("plan_deferred", "Plan Deferred"),
                    ("plan_note", "Plan Note"),
                    ("plan_completed", "Plan Completed"),
                    ("plan_discarded", "Plan Discarded"),
                    ("plan_moved", "Plan Moved"),
                    ("plan_requeued", "Plan Requeued"),
                    ("plan_reclaimed", "Plan Reclaimed"),
                    ("late_write_kept", "Late Write Kept"),
                    ("dependency_dropped", "Dependency Dropped"),
                    ("file_edits_kept", "File Edits Kept"),
                    ("repaired", "Repaired"),
                ],
                max_length=32,
            ),
        ),
        migrations.AddField(
            model_name="lostclaim",
            name="plan",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="lost_claims", to="sessions_app.plan"
            ),
        ),
        migrations.AddField(
            model_name="lostclaim",
            name="session",
            field=models.ForeignKey(
                db_column="session_name",
                on_delete=django.db.models.deletion.CASCADE,
                related_name="lost_claims",
                to="sessions_app.session",
            ),
        ),
        migrations.AddField(
            model_name="plandependency",
            name="depends_on",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="dependent_links", to="sessions_app.plan"
            ),
        ),
        migrations.AddField(
            model_name="plandependency",
            name="plan",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="dependency_links", to="sessions_app.plan"
            ),
        ),
        migrations.AddField(
            model_name="plan",
            name="depends_on",
            field=models.ManyToManyField(
                blank=True, related_name="dependents", through="sessions_app.PlanDependency", to="sessions_app.plan"
            ),
        ),
        migrations.RunPython(claim_active_plans, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="plan",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "active")),
                fields=("session", "worker"),
                name="plan_one_active_per_worker",
            ),
        ),
        migrations.AddConstraint(
            model_name="plan",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("status", "active"), _negated=True),
                    models.Q(
                        ("worker__isnull", False), ("claimed_at__isnull", False), ("lease_expires_at__isnull", False)
                    ),
                    _connector="OR",
                ),
                name="plan_active_has_claim",
            ),
        ),
        migrations.AddConstraint(
            model_name="plan",
            constraint=models.CheckConstraint(
                condition=models.Q(("status", "active"), ("lease_expires_at__isnull", True), _connector="OR"),
                name="plan_lease_only_while_active",
            ),
        ),
        migrations.AddConstraint(
            model_name="plan",
            constraint=models.CheckConstraint(
                condition=models.Q(("status", "queued"), ("waiting_for_person", False), _connector="OR"),
                name="plan_waits_only_while_queued",
            ),
        ),
        migrations.AddConstraint(
            model_name="lostclaim",
            constraint=models.UniqueConstraint(fields=("session", "worker"), name="lost_claim_one_per_worker"),
        ),
        migrations.AddConstraint(
            model_name="plandependency",
            constraint=models.UniqueConstraint(fields=("plan", "depends_on"), name="plan_dependency_unique"),
        ),
        migrations.AddConstraint(
            model_name="plandependency",
            constraint=models.CheckConstraint(
                condition=models.Q(("plan", models.F("depends_on")), _negated=True), name="plan_dependency_not_self"
            ),
        ),
        migrations.RunPython(restore_triggers, migrations.RunPython.noop),
    ]
