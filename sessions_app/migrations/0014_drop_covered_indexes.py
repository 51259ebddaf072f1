"""Drop the single-column indexes whose column already leads a composite index, on SQLite
as 0011 did on PostgreSQL.

Each of them was kept up to date by every write that touched its table, and none is read:
a lookup of a session's events or plans (the cascade of a session's deletion included)
uses event_session_id or plan_session_status_pos, which begin with the session name, and a
lookup of a plan's revisions uses the unique (plan_id, number) index of revision_plan_number.
Each event and revision row written now updates one index fewer.

SQLite: the event and plan tables' session name indexes and the revision table's plan
index go. PostgreSQL: the revision table's plain plan index goes (0011 took the others).
Only the database changes: the models still declare the foreign keys with db_index, as
after 0011, so the migration state is left as it was. A later migration that rebuilds one
of these tables on SQLite makes its index again and must drop it after. Going back creates
the indexes again under the names Django gives them.
"""

from importlib import import_module

from django.db import migrations

# Earlier migrations are frozen too: 0011's lookup of an index by its one column is reused.
_0011 = import_module("sessions_app.migrations.0011_drop_redundant_indexes")

# (table, column): a composite index that begins with the column serves every lookup by it.
COVERED = {
    "sqlite": (
        ("sessions_app_event", "session_name"),
        ("sessions_app_plan", "session_name"),
        ("sessions_app_revision", "plan_id"),
    ),
    "postgresql": (("sessions_app_revision", "plan_id"),),
}


def _single_column_indexes(cursor, vendor: str, table: str, column: str) -> list[str]:
    """Names of the indexes of ``table`` on ``column`` alone that are neither unique, partial
    nor a primary key's (on PostgreSQL nor a prefix index, 0011's to drop)."""
    if vendor == "sqlite":
        cursor.execute(
            """SELECT l.name FROM pragma_index_list(%s) AS l
            WHERE l."unique" = 0 AND l.partial = 0 AND l.origin = 'c'
            AND (SELECT group_concat(i.name) FROM pragma_index_info(l.name) AS i) = %s""",
            [table, column],
        )
        return [row[0] for row in cursor.fetchall()]
    return [name for name, definition in _0011._indexes(cursor, table, column) if "pattern_ops" not in definition]


def drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        for table, column in COVERED.get(vendor, ()):
            for name in _single_column_indexes(cursor, vendor, table, column):
                cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


def restore(apps, schema_editor):
    """The indexes Django made, under the names it gave them (its hash of the columns)."""
    # names_digest is a public function of that module that the stubs leave out.
    from django.db.backends.utils import names_digest, split_identifier  # type: ignore[attr-defined]

    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for table, column in COVERED.get(connection.vendor, ()):
            _, table_name = split_identifier(table)
            name = f"{table_name}_{column}_{names_digest(table_name, column, length=8)}"
            name = connection.ops.quote_name(name)[1:-1]
            cursor.execute(f'CREATE INDEX IF NOT EXISTS "{name}" ON {table} ({column})')


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0013_search_vector_when_completed")]

    operations = [migrations.RunPython(drop, restore)]
