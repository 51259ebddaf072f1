"""History search on PostgreSQL: a stored generated tsvector column and a GIN index on it.

SQLite searches with the FTS5 table of 0002, so there this migration does nothing. The
column is not on the Django model (Django would try to write it); sessions_app.search reads
it with raw SQL. The SQL is written out here, not imported, so that this migration keeps
meaning what it meant when it was applied.

Words are what FTS5's unicode61 tokenizer finds: every character that is not a letter or
digit becomes a space before PostgreSQL's parser sees the text (the parser alone would keep
"billing/models.py" as one token), and the 'simple' configuration only lowercases. Weights:
goal A, outputs and outcome B, context and inputs C.

A later migration that changes the type of one of these columns must drop the generated
column first and add it back after: PostgreSQL refuses to alter a column it is built from.
"""

from django.db import migrations


def _words(columns: str) -> str:
    return f"to_tsvector('simple'::regconfig, regexp_replace({columns}, '[^[:alnum:]]', ' ', 'g'))"


def search_column(words) -> str:
    """The generated column, each section's text made a vector by ``words`` (migration
    0006 builds the column again with stemmed words)."""
    return f"""ALTER TABLE sessions_app_plan ADD COLUMN IF NOT EXISTS search_vector tsvector
        GENERATED ALWAYS AS (
            setweight({words("goal")}, 'A')
            || setweight({words("outputs || ' ' || outcome")}, 'B')
            || setweight({words("context || ' ' || inputs")}, 'C')
        ) STORED"""


# Only completed plans are searchable, so only they are indexed: queued, active and
# discarded plans never cost the index anything.
SEARCH_INDEX = """CREATE INDEX IF NOT EXISTS sessions_app_plan_search_gin ON sessions_app_plan
        USING gin (search_vector) WHERE status = 'completed'"""

FORWARD = [search_column(_words), SEARCH_INDEX]

BACKWARD = [
    "DROP INDEX IF EXISTS sessions_app_plan_search_gin",
    "ALTER TABLE sessions_app_plan DROP COLUMN IF EXISTS search_vector",
]


def _execute(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0002_history_search")]
    operations = [migrations.RunPython(_execute(FORWARD), _execute(BACKWARD))]
