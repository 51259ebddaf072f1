"""History search matches word forms: English stemming on both engines, accents folded.

SQLite: the FTS5 table of 0002 is rebuilt with Porter's stemmer over unicode61 (accents
removed as before) and a session_key column (the session's name as one word, led by the
private-use character U+E000 that no query word holds) that a search in one session
matches on, so that it reads that session's entries only. Its triggers are
dropped and made again for the new columns, and the table is re-filled from the completed
plans.

PostgreSQL: the generated column of 0003 is replaced by one built with a stemming text
search configuration, nineplan_search (English Snowball stems, no stop words: FTS5 has
none), over the text with its accents folded by nineplan_fold. The folding is translate()
over a fixed table, the letters FTS5's remove_diacritics 2 folds, in an IMMUTABLE SQL
function (a generated column takes nothing less): unlike the unaccent extension it needs no
extension installed, so it works for any role that may create tables in its database.

The SQL is written out here, not imported from the live modules, so that this migration
keeps meaning what it meant when it was applied. The way back restores what 0002 and 0003
made, with their own (as frozen) statements.
"""

from importlib import import_module

from django.db import migrations

_0002 = import_module("sessions_app.migrations.0002_history_search")
_0003 = import_module("sessions_app.migrations.0003_postgres_search")

FTS_TABLE = "sessions_app_plan_fts"
TRIGGER_NAMES = ("sessions_app_plan_fts_ai", "sessions_app_plan_fts_au", "sessions_app_plan_fts_ad")
SECTIONS = "goal, context, inputs, outputs, outcome"

SQLITE_TABLE = f"""CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(
        plan_id UNINDEXED, session_name UNINDEXED, session_key,
        goal, context, inputs, outputs, outcome,
        tokenize='porter unicode61 remove_diacritics 2')"""
# The triggers of the new table (migrations 0007 and 0008 put them back after rebuilding
# the plan table, which drops them).
SQLITE_TRIGGERS = [
    f"""CREATE TRIGGER {FTS_TABLE}_ai AFTER INSERT ON sessions_app_plan
        WHEN new.status = 'completed' BEGIN
        INSERT INTO {FTS_TABLE}(plan_id, session_name, session_key, goal, context, inputs, outputs, outcome)
        VALUES (new.id, new.session_name, char(57344) || replace(new.session_name, '-', '0'),
                new.goal, new.context, new.inputs, new.outputs, new.outcome);
        END""",
    f"""CREATE TRIGGER {FTS_TABLE}_au AFTER UPDATE ON sessions_app_plan
        WHEN old.status = 'completed' OR new.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE old.status = 'completed'
            AND {FTS_TABLE} MATCH 'session_key : "' || char(57344) || replace(replace(old.session_name, '-', '0'), '"', '""') || '"'
            AND plan_id = old.id;
        INSERT INTO {FTS_TABLE}(plan_id, session_name, session_key, goal, context, inputs, outputs, outcome)
        SELECT new.id, new.session_name, char(57344) || replace(new.session_name, '-', '0'),
               new.goal, new.context, new.inputs, new.outputs, new.outcome
        WHERE new.status = 'completed';
        END""",
    f"""CREATE TRIGGER {FTS_TABLE}_ad AFTER DELETE ON sessions_app_plan
        WHEN old.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE}
        WHERE {FTS_TABLE} MATCH 'session_key : "' || char(57344) || replace(replace(old.session_name, '-', '0'), '"', '""') || '"'
            AND plan_id = old.id;
        END""",
]
SQLITE_DROP = [*(f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGER_NAMES), f"DROP TABLE IF EXISTS {FTS_TABLE}"]

SQLITE_FORWARD = [
    *SQLITE_DROP,
    SQLITE_TABLE,
    *SQLITE_TRIGGERS,
    f"""INSERT INTO {FTS_TABLE}(plan_id, session_name, session_key, {SECTIONS})
        SELECT id, session_name, char(57344) || replace(session_name, '-', '0'), {SECTIONS}
        FROM sessions_app_plan WHERE status = 'completed'""",
]

SQLITE_BACKWARD = [
    *SQLITE_DROP,
    *_0002.SQLITE_SCHEMA,
    f"""INSERT INTO {FTS_TABLE}(plan_id, session_name, {SECTIONS})
        SELECT id, session_name, {SECTIONS} FROM sessions_app_plan WHERE status = 'completed'""",
]

# Each letter of ACCENTED folds to the letter at the same place in UNACCENTED.
ACCENTED = (
    "ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüýÿĀāĂăĄąĆ"
    "ćĈĉĊċČčĎďĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĨĩĪīĬĭĮįİĴĵĶķĹĺĻļĽľŃńŅņŇňŌōŎŏŐő"
    "ŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžƠơƯưǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛ"
    "ǜǞǟǠǡǦǧǨǩǪǫǬǭǰǴǵǸǹǺǻȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗȘșȚțȞȟȦȧȨȩȪȫȬȭȮȯ"
    "ȰȱȲȳḀḁḂḃḄḅḆḇḈḉḊḋḌḍḎḏḐḑḒḓḔḕḖḗḘḙḚḛḜḝḞḟḠḡḢḣḤḥḦḧḨḩḪḫḬḭḮḯḰḱḲḳḴḵḶḷ"
    "ḸḹḺḻḼḽḾḿṀṁṂṃṄṅṆṇṈṉṊṋṌṍṎṏṐṑṒṓṔṕṖṗṘṙṚṛṜṝṞṟṠṡṢṣṤṥṦṧṨṩṪṫṬṭṮṯṰṱṲṳ"
    "ṴṵṶṷṸṹṺṻṼṽṾṿẀẁẂẃẄẅẆẇẈẉẊẋẌẍẎẏẐẑẒẓẔẕẖẗẘẙẠạẢảẤấẦầẨẩẪẫẬậẮắẰằẲẳẴẵ"
    "ẶặẸẹẺẻẼẽẾếỀềỂểỄễỆệỈỉỊịỌọỎỏỐốỒồỔổỖỗỘộỚớỜờỞởỠỡỢợỤụỦủỨứỪừỬửỮữỰự"
    "ỲỳỴỵỶỷỸỹſẛ"
)
UNACCENTED = (
    "AAAAAACEEEEIIIINOOOOOUUUUYaaaaaaceeeeiiiinooooouuuuyyAaAaAaC"
    "cCcCcCcDdEeEeEeEeEeGgGgGgGgHhIiIiIiIiIJjKkLlLlLlNnNnNnOoOoOo"
    "RrRrRrSsSsSsSsTtTtUuUuUuUuUuUuWwYyYZzZzZzOoUuAaIiOoUuUuUuUuU"
    "uAaAaGgKkOoOojGgNnAaAaAaEeEeIiIiOoOoRrRrUuUuSsTtHhAaEeOoOoOo"
    "OoYyAaBbBbBbCcDdDdDdDdDdEeEeEeEeEeFfGgHhHhHhHhHhIiIiKkKkKkLl"
    "LlLlLlMmMmMmNnNnNnNnOoOoOoOoPpPpRrRrRrRrSsSsSsSsSsTtTtTtTtUu"
    "UuUuUuUuVvVvWwWwWwWwWwXxXxYyZzZzZzhtwyAaAaAaAaAaAaAaAaAaAaAa"
    "AaEeEeEeEeEeEeEeEeIiIiOoOoOoOoOoOoOoOoOoOoOoOoUuUuUuUuUuUuUu"
    "YyYyYyYyss"
)


def _words(columns: str) -> str:
    return (
        f"to_tsvector('nineplan_search'::regconfig, regexp_replace(nineplan_fold({columns}), '[^[:alnum:]]', ' ', 'g'))"
    )


POSTGRES_DROP = [
    "DROP INDEX IF EXISTS sessions_app_plan_search_gin",
    "ALTER TABLE sessions_app_plan DROP COLUMN IF EXISTS search_vector",
]

POSTGRES_FORWARD = [
    f"""CREATE OR REPLACE FUNCTION nineplan_fold(text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT pg_catalog.translate($1, '{ACCENTED}', '{UNACCENTED}') $$""",
    "CREATE TEXT SEARCH DICTIONARY nineplan_english_stem (TEMPLATE = pg_catalog.snowball, LANGUAGE = english)",
    "CREATE TEXT SEARCH CONFIGURATION nineplan_search (COPY = pg_catalog.simple)",
    """ALTER TEXT SEARCH CONFIGURATION nineplan_search
        ALTER MAPPING FOR asciiword, word, asciihword, hword, hword_asciipart, hword_part
        WITH nineplan_english_stem""",
    *POSTGRES_DROP,
    _0003.search_column(_words),
    _0003.SEARCH_INDEX,
]

POSTGRES_BACKWARD = [
    *POSTGRES_DROP,
    "DROP TEXT SEARCH CONFIGURATION IF EXISTS nineplan_search",
    "DROP TEXT SEARCH DICTIONARY IF EXISTS nineplan_english_stem",
    "DROP FUNCTION IF EXISTS nineplan_fold(text)",
    *_0003.FORWARD,
]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0005_sort_key")]
    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        )
    ]
