"""The history search index: FTS5 over completed plans on SQLite (PostgreSQL: later)."""

from django.db import migrations


def create_index(apps, schema_editor):
    from sessions_app.search import ensure_index

    ensure_index(schema_editor.connection)


def drop_index(apps, schema_editor):
    from sessions_app.search import FTS_TABLE, SQLITE_TRIGGERS

    if schema_editor.connection.vendor != "sqlite":
        return
    for trigger in SQLITE_TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    schema_editor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0001_initial")]
    operations = [migrations.RunPython(create_index, drop_index)]
