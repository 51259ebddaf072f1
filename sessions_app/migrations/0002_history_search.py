"""The history search index: FTS5 over completed plans on SQLite (PostgreSQL: 0003).

The SQL is written out here, not imported, so that this migration keeps meaning what it
meant when it was applied. Only completed plans are indexed, and the WHEN guards keep
every other write off the index.
"""

from django.db import migrations

FTS_TABLE = "sessions_app_plan_fts"
SQLITE_SCHEMA = [
    """CREATE VIRTUAL TABLE IF NOT EXISTS sessions_app_plan_fts USING fts5(
        plan_id UNINDEXED, session_name UNINDEXED, goal, context, inputs, outputs, outcome,
        tokenize='unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER IF NOT EXISTS sessions_app_plan_fts_ai AFTER INSERT ON sessions_app_plan
        WHEN new.status = 'completed' BEGIN
        INSERT INTO sessions_app_plan_fts(plan_id, session_name, goal, context, inputs, outputs, outcome)
        VALUES (new.id, new.session_name, new.goal, new.context, new.inputs, new.outputs, new.outcome);
        END""",
    """CREATE TRIGGER IF NOT EXISTS sessions_app_plan_fts_au AFTER UPDATE ON sessions_app_plan
        WHEN old.status = 'completed' OR new.status = 'completed' BEGIN
        DELETE FROM sessions_app_plan_fts WHERE old.status = 'completed' AND plan_id = old.id;
        INSERT INTO sessions_app_plan_fts(plan_id, session_name, goal, context, inputs, outputs, outcome)
        SELECT new.id, new.session_name, new.goal, new.context, new.inputs, new.outputs, new.outcome
        WHERE new.status = 'completed';
        END""",
    """CREATE TRIGGER IF NOT EXISTS sessions_app_plan_fts_ad AFTER DELETE ON sessions_app_plan
        WHEN old.status = 'completed' BEGIN
        DELETE FROM sessions_app_plan_fts WHERE plan_id = old.id;
        END""",
]
SQLITE_TRIGGERS = ("sessions_app_plan_fts_ad", "sessions_app_plan_fts_ai", "sessions_app_plan_fts_au")


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in SQLITE_SCHEMA:
        schema_editor.execute(statement)


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for trigger in SQLITE_TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    schema_editor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0001_initial")]
    operations = [migrations.RunPython(create_index, drop_index)]
