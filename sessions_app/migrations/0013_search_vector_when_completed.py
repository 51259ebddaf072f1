"""PostgreSQL: the search vector is computed for completed plans only.

The stored generated column of 0006 was computed from the plan's text on every insert and on
every update that wrote a text column: each plan added, each note and each completion paid
for the stemmed vector (about half a millisecond of the database's CPU for a plan of a few
hundred characters), although only completed plans are searched and indexed. The column is
built again as ``CASE WHEN status = 'completed' THEN <the same vector> END``: queued, active,
in-review, held and discarded plans hold NULL, and the vector is computed once, when a plan
becomes completed (or its text changes while it is). The search and its index read
completed plans only, so what a search finds is unchanged.

``status`` is now one of the columns the vector is built from: a later migration that
changes its type must drop the column first and add it back after, as 0003 says of the
others. Nothing changes on SQLite, whose FTS5 triggers already index completed plans only.

The SQL is written out here, not imported from the live modules, so that this migration
keeps meaning what it meant when it was applied; the way back rebuilds the column of 0006.
"""

from django.db import migrations


def _words(columns: str) -> str:
    return (
        "to_tsvector('nineplan_search'::regconfig, "
        f"regexp_replace(nineplan_fold({columns}), '[^[:alnum:]]', ' ', 'g'))"
    )


# Goal weight A, outputs and outcome B, context and inputs C, as 0003 and 0006 made it.
VECTOR = (
    f"setweight({_words('goal')}, 'A') "
    f"""|| setweight({_words("outputs || ' ' || outcome")}, 'B') """
    f"""|| setweight({_words("context || ' ' || inputs")}, 'C')"""
)

DROP = [
    "DROP INDEX IF EXISTS sessions_app_plan_search_gin",
    "ALTER TABLE sessions_app_plan DROP COLUMN IF EXISTS search_vector",
]
INDEX = """CREATE INDEX IF NOT EXISTS sessions_app_plan_search_gin ON sessions_app_plan
        USING gin (search_vector) WHERE status = 'completed'"""

FORWARD = [
    *DROP,
    f"""ALTER TABLE sessions_app_plan ADD COLUMN search_vector tsvector
        GENERATED ALWAYS AS (CASE WHEN status = 'completed' THEN {VECTOR} END) STORED""",
    INDEX,
]
BACKWARD = [
    *DROP,
    f"""ALTER TABLE sessions_app_plan ADD COLUMN search_vector tsvector
        GENERATED ALWAYS AS ({VECTOR}) STORED""",
    INDEX,
]


def _on_postgresql(statements: list[str]):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0012_remote_agents")]
    operations = [migrations.RunPython(_on_postgresql(FORWARD), _on_postgresql(BACKWARD))]
