"""The queue's internal sort key gets its own name: ``sort_key`` (it was ``queue_position``).

People and agents see a plan's place in the queue (1 = next), never this signed key, so the
key no longer shares a name with the place. The column is renamed in place: SQLite (3.25+)
and PostgreSQL both carry the rename into the indexes, the check constraint and any
trigger that reads the column, so the table is not rebuilt.
"""

from django.db import migrations, models
from django.db.models import Q

RENAME = "ALTER TABLE sessions_app_plan RENAME COLUMN queue_position TO sort_key"
RENAME_BACK = "ALTER TABLE sessions_app_plan RENAME COLUMN sort_key TO queue_position"


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0004_plan_counters")]

    operations = [
        migrations.RemoveConstraint(model_name="plan", name="plan_unique_queue_position"),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(RENAME, RENAME_BACK)],
            state_operations=[
                migrations.RemoveConstraint(model_name="plan", name="plan_position_only_while_queued"),
                migrations.RemoveIndex(model_name="plan", name="plan_session_status_pos"),
                migrations.RenameField(model_name="plan", old_name="queue_position", new_name="sort_key"),
                migrations.AddIndex(
                    model_name="plan",
                    index=models.Index(fields=["session", "status", "sort_key"], name="plan_session_status_pos"),
                ),
                migrations.AddConstraint(
                    model_name="plan",
                    constraint=models.CheckConstraint(
                        condition=(Q(status="queued") & Q(sort_key__isnull=False))
                        | (~Q(status="queued") & Q(sort_key__isnull=True)),
                        name="plan_position_only_while_queued",
                    ),
                ),
                migrations.AlterModelOptions(name="plan", options={"ordering": ["session", "sort_key", "created_at"]}),
            ],
        ),
        migrations.AddConstraint(
            model_name="plan",
            constraint=models.UniqueConstraint(
                condition=Q(status="queued"), fields=("session", "sort_key"), name="plan_unique_sort_key"
            ),
        ),
    ]
