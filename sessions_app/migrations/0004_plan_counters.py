"""Plan counts on the session row, kept by triggers (see sessions_app/plan_counts.py).

The fields are added, the triggers created, then the counts computed once from the plans
already there. The SQL is written out here, not imported, so that this migration keeps
meaning what it meant when it was applied; sessions_app.plan_counts re-creates the same
triggers after every migrate, as a later migration that rebuilds the plan table on SQLite
drops them.
"""

from django.db import migrations, models

PLAN_TABLE = "sessions_app_plan"
SQLITE_TRIGGERS = [
    """CREATE TRIGGER IF NOT EXISTS sessions_app_plan_counts_ai
        AFTER INSERT ON sessions_app_plan BEGIN
        UPDATE sessions_app_session SET count_queued = count_queued + (CASE WHEN new.status = 'queued' THEN 1 ELSE 0 END), count_completed = count_completed + (CASE WHEN new.status = 'completed' THEN 1 ELSE 0 END), count_discarded = count_discarded + (CASE WHEN new.status = 'discarded' THEN 1 ELSE 0 END) WHERE name = new.session_name;
        END""",
    """CREATE TRIGGER IF NOT EXISTS sessions_app_plan_counts_au
        AFTER UPDATE OF status, session_name ON sessions_app_plan
        WHEN old.status IS NOT new.status OR old.session_name IS NOT new.session_name BEGIN
        UPDATE sessions_app_session SET count_queued = count_queued - (CASE WHEN old.status = 'queued' THEN 1 ELSE 0 END), count_completed = count_completed - (CASE WHEN old.status = 'completed' THEN 1 ELSE 0 END), count_discarded = count_discarded - (CASE WHEN old.status = 'discarded' THEN 1 ELSE 0 END) WHERE name = old.session_name;
        UPDATE sessions_app_session SET count_queued = count_queued + (CASE WHEN new.status = 'queued' THEN 1 ELSE 0 END), count_completed = count_completed + (CASE WHEN new.status = 'completed' THEN 1 ELSE 0 END), count_discarded = count_discarded + (CASE WHEN new.status = 'discarded' THEN 1 ELSE 0 END) WHERE name = new.session_name;
        END""",
    """CREATE TRIGGER IF NOT EXISTS sessions_app_plan_counts_ad
        AFTER DELETE ON sessions_app_plan BEGIN
        UPDATE sessions_app_session SET count_queued = count_queued - (CASE WHEN old.status = 'queued' THEN 1 ELSE 0 END), count_completed = count_completed - (CASE WHEN old.status = 'completed' THEN 1 ELSE 0 END), count_discarded = count_discarded - (CASE WHEN old.status = 'discarded' THEN 1 ELSE 0 END) WHERE name = old.session_name;
        END""",
]
SQLITE_TRIGGER_NAMES = ("sessions_app_plan_counts_ai", "sessions_app_plan_counts_au", "sessions_app_plan_counts_ad")
POSTGRES_SCHEMA = [
    """CREATE OR REPLACE FUNCTION sessions_app_plan_counts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            UPDATE sessions_app_session s SET count_queued = s.count_queued + d.queued, count_completed = s.count_completed + d.completed, count_discarded = s.count_discarded + d.discarded FROM (SELECT session_name, SUM(queued) AS queued, SUM(completed) AS completed, SUM(discarded) AS discarded FROM (SELECT session_name, (CASE WHEN status = 'queued' THEN 1 ELSE 0 END) AS queued, (CASE WHEN status = 'completed' THEN 1 ELSE 0 END) AS completed, (CASE WHEN status = 'discarded' THEN 1 ELSE 0 END) AS discarded FROM new_rows) m GROUP BY session_name) d WHERE s.name = d.session_name AND (d.queued <> 0 OR d.completed <> 0 OR d.discarded <> 0);
        ELSIF TG_OP = 'DELETE' THEN
            UPDATE sessions_app_session s SET count_queued = s.count_queued + d.queued, count_completed = s.count_completed + d.completed, count_discarded = s.count_discarded + d.discarded FROM (SELECT session_name, SUM(queued) AS queued, SUM(completed) AS completed, SUM(discarded) AS discarded FROM (SELECT session_name, -(CASE WHEN status = 'queued' THEN 1 ELSE 0 END) AS queued, -(CASE WHEN status = 'completed' THEN 1 ELSE 0 END) AS completed, -(CASE WHEN status = 'discarded' THEN 1 ELSE 0 END) AS discarded FROM old_rows) m GROUP BY session_name) d WHERE s.name = d.session_name AND (d.queued <> 0 OR d.completed <> 0 OR d.discarded <> 0);
        ELSE
            UPDATE sessions_app_session s SET count_queued = s.count_queued + d.queued, count_completed = s.count_completed + d.completed, count_discarded = s.count_discarded + d.discarded FROM (SELECT session_name, SUM(queued) AS queued, SUM(completed) AS completed, SUM(discarded) AS discarded FROM (SELECT session_name, (CASE WHEN status = 'queued' THEN 1 ELSE 0 END) AS queued, (CASE WHEN status = 'completed' THEN 1 ELSE 0 END) AS completed, (CASE WHEN status = 'discarded' THEN 1 ELSE 0 END) AS discarded FROM new_rows UNION ALL SELECT session_name, -(CASE WHEN status = 'queued' THEN 1 ELSE 0 END) AS queued, -(CASE WHEN status = 'completed' THEN 1 ELSE 0 END) AS completed, -(CASE WHEN status = 'discarded' THEN 1 ELSE 0 END) AS discarded FROM old_rows) m GROUP BY session_name) d WHERE s.name = d.session_name AND (d.queued <> 0 OR d.completed <> 0 OR d.discarded <> 0);
        END IF;
        RETURN NULL;
    END $$""",
    """DROP TRIGGER IF EXISTS sessions_app_plan_counts ON sessions_app_plan""",
    """DROP TRIGGER IF EXISTS sessions_app_plan_counts_moved ON sessions_app_plan""",
    """DROP TRIGGER IF EXISTS sessions_app_plan_counts_ins ON sessions_app_plan""",
    """CREATE TRIGGER sessions_app_plan_counts_ins AFTER INSERT ON sessions_app_plan
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sessions_app_plan_counts()""",
    """DROP TRIGGER IF EXISTS sessions_app_plan_counts_upd ON sessions_app_plan""",
    """CREATE TRIGGER sessions_app_plan_counts_upd AFTER UPDATE ON sessions_app_plan
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
        EXECUTE FUNCTION sessions_app_plan_counts()""",
    """DROP TRIGGER IF EXISTS sessions_app_plan_counts_del ON sessions_app_plan""",
    """CREATE TRIGGER sessions_app_plan_counts_del AFTER DELETE ON sessions_app_plan
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION sessions_app_plan_counts()""",
]
POSTGRES_TRIGGERS = ("sessions_app_plan_counts_ins", "sessions_app_plan_counts_upd", "sessions_app_plan_counts_del")
POSTGRES_FUNCTION = "sessions_app_plan_counts"
RECOUNT = """UPDATE sessions_app_session SET count_queued = (SELECT COUNT(*) FROM sessions_app_plan p WHERE p.session_name = sessions_app_session.name AND p.status = 'queued'), count_completed = (SELECT COUNT(*) FROM sessions_app_plan p WHERE p.session_name = sessions_app_session.name AND p.status = 'completed'), count_discarded = (SELECT COUNT(*) FROM sessions_app_plan p WHERE p.session_name = sessions_app_session.name AND p.status = 'discarded')"""


def create_counters(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = SQLITE_TRIGGERS if vendor == "sqlite" else POSTGRES_SCHEMA if vendor == "postgresql" else []
    for statement in statements:
        schema_editor.execute(statement)
    schema_editor.execute(RECOUNT)


def drop_counters(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        for name in SQLITE_TRIGGER_NAMES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
    elif vendor == "postgresql":
        for name in POSTGRES_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON {PLAN_TABLE}")
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {POSTGRES_FUNCTION}()")


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0003_postgres_search")]

    operations = [
        migrations.AddField(
            model_name="session",
            name="count_queued",
            field=models.IntegerField(default=0, db_default=0, editable=False),
        ),
        migrations.AddField(
            model_name="session",
            name="count_completed",
            field=models.IntegerField(default=0, db_default=0, editable=False),
        ),
        migrations.AddField(
            model_name="session",
            name="count_discarded",
            field=models.IntegerField(default=0, db_default=0, editable=False),
        ),
        migrations.RunPython(create_counters, drop_counters),
    ]
