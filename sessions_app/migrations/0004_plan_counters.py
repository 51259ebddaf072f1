"""Plan counts on the session row, kept by triggers (sessions_app/counters.py).

The fields are added, the triggers created, then the counts computed once from the plans
already there. On SQLite the triggers are also re-created after every migrate, as a later
migration that rebuilds the plan table drops them.
"""

from django.db import migrations, models


def create_counters(apps, schema_editor):
    from sessions_app import counters

    counters.ensure_triggers(schema_editor.connection)
    with schema_editor.connection.cursor() as cur:
        cur.execute(counters.RECOUNT)


def drop_counters(apps, schema_editor):
    from sessions_app import counters

    conn = schema_editor.connection
    if conn.vendor == "sqlite":
        for name in counters.SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
    elif conn.vendor == "postgresql":
        for name in counters.POSTGRES_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON {counters.PLAN_TABLE}")
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {counters.POSTGRES_FUNCTION}()")


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0003_postgres_search")]

    operations = [
        migrations.AddField(
            model_name="session", name="count_queued", field=models.IntegerField(default=0, db_default=0, editable=False)
        ),
        migrations.AddField(
            model_name="session", name="count_completed", field=models.IntegerField(default=0, db_default=0, editable=False)
        ),
        migrations.AddField(
            model_name="session", name="count_discarded", field=models.IntegerField(default=0, db_default=0, editable=False)
        ),
        migrations.RunPython(create_counters, drop_counters),
    ]
