"""Review and revisions: a session's review policy, a plan's review flag and rejection
count, the ``in_review`` and ``held`` statuses, the review permission, and every version
of a plan's text (Revision).

Widening the status check rebuilds the plan table on SQLite, which drops the table's
triggers: the counting and search-index triggers are put back at the end (either way).
"""

from importlib import import_module

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

# The triggers of 0004 and 0006, put back as 0007 puts them back.
restore_triggers = import_module("sessions_app.migrations.0007_workers_leases").restore_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0007_workers_leases"),
    ]

    operations = [
        migrations.CreateModel(
            name="Revision",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("number", models.PositiveIntegerField()),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("add", "Add"),
                            ("note", "Note"),
                            ("file_edit", "File Edit"),
                            ("defer", "Defer"),
                            ("review", "Review"),
                            ("restore", "Restore"),
                            ("import", "Import"),
                        ],
                        max_length=16,
                    ),
                ),
                ("actor", models.CharField(max_length=150)),
                ("sections", models.JSONField(default=list)),
                ("undo", models.JSONField(default=dict)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "ordering": ["plan", "number"],
            },
        ),
        migrations.AlterModelOptions(
            name="plan",
            options={
                "ordering": ["session", "sort_key", "created_at"],
                "permissions": [("review_plan", "Can review plan")],
            },
        ),
        migrations.RemoveConstraint(
            model_name="plan",
            name="plan_status_valid",
        ),
        migrations.AddField(
            model_name="plan",
            name="rejections",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="plan",
            name="review",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="session",
            name="review",
            field=models.CharField(
                choices=[("none", "No review"), ("required", "Every plan is reviewed")],
                db_default="none",
                default="none",
                max_length=10,
            ),
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
                    ("plan_submitted", "Plan Submitted"),
                    ("plan_approved", "Plan Approved"),
                    ("plan_rejected", "Plan Rejected"),
                    ("plan_held", "Plan Held"),
                    ("plan_restored", "Plan Restored"),
                    ("session_changed", "Session Changed"),
                    ("repaired", "Repaired"),
                ],
                max_length=32,
            ),
        ),
        migrations.AlterField(
            model_name="plan",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("active", "Active"),
                    ("completed", "Completed"),
                    ("discarded", "Discarded"),
                    ("in_review", "In Review"),
                    ("held", "Held"),
                ],
                default="queued",
                max_length=10,
            ),
        ),
        migrations.AddConstraint(
            model_name="plan",
            constraint=models.CheckConstraint(
                condition=models.Q(("status__in", ["queued", "active", "completed", "discarded", "in_review", "held"])),
                name="plan_status_valid",
            ),
        ),
        migrations.AddField(
            model_name="revision",
            name="plan",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="revisions", to="sessions_app.plan"
            ),
        ),
        migrations.AddConstraint(
            model_name="revision",
            constraint=models.UniqueConstraint(fields=("plan", "number"), name="revision_plan_number"),
        ),
        migrations.RunPython(restore_triggers, restore_triggers),
    ]
