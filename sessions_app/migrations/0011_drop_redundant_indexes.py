"""PostgreSQL: drop the indexes no query reads, which every write kept up to date.

Django gives each foreign key, and each character primary key, a second index with
varchar_pattern_ops, for LIKE 'prefix%' on it: 9plan never looks up a session name, plan
id or project name by a prefix, and an equality lookup uses the plain index. An event
row paid for five indexes, a plan row (whose indexed columns change on pull and
complete, so no update of it is a heap-only one) for ten. The single-column session
name indexes of the event and plan tables are dropped too: the composite indexes that
begin with the session name (event_session_id, plan_session_status_pos) serve every
lookup by session, the cascade of a session's deletion included.

Only the database changes: the models still declare the foreign keys with db_index, so
the migration state, and SQLite (which has no such second indexes), are left as they
were. The names carry a hash Django derived from the columns, so they are looked up, not
written out. Going back creates the indexes again under the same names.
"""

from django.db import migrations

# (table, column, whether the plain single-column index goes as well)
DROPPED = (
    ("sessions_app_event", "session_name", True),
    ("sessions_app_event", "plan_id", False),
    ("sessions_app_plan", "session_name", True),
    ("sessions_app_plan", "id", False),
    ("sessions_app_revision", "plan_id", False),
    ("sessions_app_lostclaim", "plan_id", False),
    ("sessions_app_lostclaim", "session_name", False),
    ("sessions_app_plandependency", "plan_id", False),
    ("sessions_app_plandependency", "depends_on_id", False),
)


def _indexes(cursor, table: str, column: str) -> list[tuple[str, str]]:
    """(name, definition) of the single-column indexes of ``table`` on ``column`` that are
    neither unique nor a primary key."""
    cursor.execute(
        """SELECT i.relname, pg_get_indexdef(x.indexrelid)
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
        WHERE t.relname = %s AND a.attname = %s AND x.indnatts = 1 AND NOT x.indisunique
        AND NOT x.indisprimary AND x.indpred IS NULL""",
        [table, column],
    )
    return cursor.fetchall()


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for table, column, plain_too in DROPPED:
            for name, definition in _indexes(cursor, table, column):
                if "varchar_pattern_ops" in definition or plain_too:
                    cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


def restore(apps, schema_editor):
    """The indexes Django made, under the names it gave them (its hash of the columns)."""
    if schema_editor.connection.vendor != "postgresql":
        return
    # names_digest is a public function of that module that the stubs leave out.
    from django.db.backends.utils import names_digest, split_identifier  # type: ignore[attr-defined]

    with schema_editor.connection.cursor() as cursor:
        for table, column, plain_too in DROPPED:
            _, table_name = split_identifier(table)
            name = f"{table_name}_{column}_{names_digest(table_name, column, length=8)}"
            name = schema_editor.connection.ops.quote_name(name)[1:-1]
            if plain_too:
                cursor.execute(f'CREATE INDEX IF NOT EXISTS "{name}" ON {table} ({column})')
            cursor.execute(f'CREATE INDEX IF NOT EXISTS "{name}_like" ON {table} ({column} varchar_pattern_ops)')


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0010_webhooks")]

    operations = [migrations.RunPython(drop, restore)]
