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

from importlib import import_module

from django.db import migrations

# Earlier migrations are frozen too: their words, index and drop statements are reused.
_0003 = import_module("sessions_app.migrations.0003_postgres_search")
_0006 = import_module("sessions_app.migrations.0006_search_word_forms")
_words = _0006._words

# Goal weight A, outputs and outcome B, context and inputs C, as 0003 and 0006 made it.
VECTOR = (
    f"setweight({_words('goal')}, 'A') "
    f"""|| setweight({_words("outputs || ' ' || outcome")}, 'B') """
    f"""|| setweight({_words("context || ' ' || inputs")}, 'C')"""
)

FORWARD = [
    *_0003.BACKWARD,
    f"""ALTER TABLE sessions_app_plan ADD COLUMN search_vector tsvector
        GENERATED ALWAYS AS (CASE WHEN status = 'completed' THEN {VECTOR} END) STORED""",
    _0003.SEARCH_INDEX,
]
BACKWARD = [
    *_0003.BACKWARD,
    f"""ALTER TABLE sessions_app_plan ADD COLUMN search_vector tsvector
        GENERATED ALWAYS AS ({VECTOR}) STORED""",
    _0003.SEARCH_INDEX,
]


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0012_remote_agents")]
    operations = [migrations.RunPython(_0003._execute(FORWARD), _0003._execute(BACKWARD))]
