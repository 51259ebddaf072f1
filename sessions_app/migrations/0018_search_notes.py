"""History search reads the plan's Notes too, with a weight below the goal's and the outcome's.

Agents are told to write what they find into the Notes (``9plan_plan_note``), and a search
for it found nothing. The Notes are stemmed and their accents folded as the other sections
are.

SQLite: the FTS5 table of 0006 is rebuilt with a ``notes`` column after the outcome, its
triggers made again to fill it, and the table re-filled from the completed plans (so plans
completed before this migration are found by their Notes too). A later migration that
rebuilds the plan table on SQLite must put back these triggers, not 0006's.

PostgreSQL: the generated column of 0013 is built again with the Notes appended at weight D
(goal A, outputs and outcome B, context and inputs C), still NULL but for completed plans;
adding the column computes it for every existing row.

The SQL is written out here or taken from earlier (frozen) migrations, never from the live
modules; the way back restores what 0006 and 0013 made.
"""

from importlib import import_module

from django.db import migrations

_0003 = import_module("sessions_app.migrations.0003_postgres_search")
_0006 = import_module("sessions_app.migrations.0006_search_word_forms")
_0013 = import_module("sessions_app.migrations.0013_search_vector_when_completed")

FTS_TABLE = _0006.FTS_TABLE
TRIGGER_NAMES = _0006.TRIGGER_NAMES
SECTIONS = "goal, context, inputs, outputs, outcome, notes"
COLUMNS = f"plan_id, session_name, session_key, {SECTIONS}"
# The old row's entry, found through its session's key, so that a delete reads that
# session's entries only (as 0006 does).
OLD_ENTRY = (
    f"""{FTS_TABLE} MATCH 'session_key : "' || char(57344) || replace(replace(old.session_name, '-', '0'), '"', '""') || '"'"""
    " AND plan_id = old.id"
)


def _values(row: str) -> str:
    return (
        f"{row}id, {row}session_name, char(57344) || replace({row}session_name, '-', '0'), "
        f"{row}goal, {row}context, {row}inputs, {row}outputs, {row}outcome, {row}notes"
    )


SQLITE_TABLE = f"""CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(
        plan_id UNINDEXED, session_name UNINDEXED, session_key,
        goal, context, inputs, outputs, outcome, notes,
        tokenize='porter unicode61 remove_diacritics 2')"""
SQLITE_TRIGGERS = [
    f"""CREATE TRIGGER {FTS_TABLE}_ai AFTER INSERT ON sessions_app_plan
        WHEN new.status = 'completed' BEGIN
        INSERT INTO {FTS_TABLE}({COLUMNS}) VALUES ({_values("new.")});
        END""",
    f"""CREATE TRIGGER {FTS_TABLE}_au AFTER UPDATE ON sessions_app_plan
        WHEN old.status = 'completed' OR new.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE old.status = 'completed' AND {OLD_ENTRY};
        INSERT INTO {FTS_TABLE}({COLUMNS}) SELECT {_values("new.")} WHERE new.status = 'completed';
        END""",
    f"""CREATE TRIGGER {FTS_TABLE}_ad AFTER DELETE ON sessions_app_plan
        WHEN old.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE {OLD_ENTRY};
        END""",
]
SQLITE_FORWARD = [
    *_0006.SQLITE_DROP,
    SQLITE_TABLE,
    *SQLITE_TRIGGERS,
    f"INSERT INTO {FTS_TABLE}({COLUMNS}) SELECT {_values('')} FROM sessions_app_plan WHERE status = 'completed'",
]
# 0006's forward statements drop what is there and build its table, triggers and rows.
SQLITE_BACKWARD = _0006.SQLITE_FORWARD

VECTOR = f"{_0013.VECTOR} || setweight({_0006._words('notes')}, 'D')"
POSTGRES_FORWARD = [
    *_0003.BACKWARD,
    f"""ALTER TABLE sessions_app_plan ADD COLUMN search_vector tsvector
        GENERATED ALWAYS AS (CASE WHEN status = 'completed' THEN {VECTOR} END) STORED""",
    _0003.SEARCH_INDEX,
]
POSTGRES_BACKWARD = _0013.FORWARD


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


forward = _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD})
backward = _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD})


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0017_consents")]
    operations = [migrations.RunPython(forward, backward)]
