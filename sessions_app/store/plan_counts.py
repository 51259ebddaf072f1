"""Plan counts kept on each session row, by the database itself.

Every answer an agent gets after add, pull or complete carries the queue's length and the
completed count, and the session lists show them for every session. Counted on demand they
grow with the session (each count reads the session's plans, and a list page needs a
grouped count over every plan); kept as counters they cost one indexed row read
(docs/benchmarks.md).

Triggers keep them, not the services: every write of a plan row (a service, an import, the
repair, a bulk load, a hand-made fix in a database shell) moves the counts with it, in the
same transaction, so they cannot drift from the plans. ``recount`` recomputes them from the
plans, for the repair.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

from sessions_app.models import Plan, Session

SESSION_TABLE = Session._meta.db_table
PLAN_TABLE = Plan._meta.db_table
COUNTED = ("queued", "completed", "discarded")
COLUMNS = {status: f"count_{status}" for status in COUNTED}


def _moves(sign: str, row: str, key: str) -> str:
    """One UPDATE moving the counts for the plan ``row`` (NEW or OLD) by ``sign``."""
    sets = ", ".join(
        f"{column} = {column} {sign} (CASE WHEN {row}.status = '{status}' THEN 1 ELSE 0 END)"
        for status, column in COLUMNS.items()
    )
    return f"UPDATE {SESSION_TABLE} SET {sets} WHERE name = {row}.{key}"


# SQLite: one trigger per event. The update trigger fires only when a plan changes status
# or session, so writing a plan's text costs the counts nothing.
SQLITE_TRIGGERS = {
    "sessions_app_plan_counts_ai": f"""CREATE TRIGGER IF NOT EXISTS sessions_app_plan_counts_ai
        AFTER INSERT ON {PLAN_TABLE} BEGIN
        {_moves("+", "new", "session_name")};
        END""",
    "sessions_app_plan_counts_au": f"""CREATE TRIGGER IF NOT EXISTS sessions_app_plan_counts_au
        AFTER UPDATE OF status, session_name ON {PLAN_TABLE}
        WHEN old.status IS NOT new.status OR old.session_name IS NOT new.session_name BEGIN
        {_moves("-", "old", "session_name")};
        {_moves("+", "new", "session_name")};
        END""",
    "sessions_app_plan_counts_ad": f"""CREATE TRIGGER IF NOT EXISTS sessions_app_plan_counts_ad
        AFTER DELETE ON {PLAN_TABLE} BEGIN
        {_moves("-", "old", "session_name")};
        END""",
}

POSTGRES_FUNCTION = "sessions_app_plan_counts"


def _pg_moves(sign: str, rows: str) -> str:
    """The per-session changes of the counts for a transition table of plan rows."""
    flags = ", ".join(f"{sign}(CASE WHEN status = '{status}' THEN 1 ELSE 0 END) AS {status}" for status in COUNTED)
    return f"SELECT session_name, {flags} FROM {rows}"


def _pg_apply(moves: str) -> str:
    sums = ", ".join(f"SUM({status}) AS {status}" for status in COUNTED)
    sets = ", ".join(f"{column} = s.{column} + d.{status}" for status, column in COLUMNS.items())
    changed = " OR ".join(f"d.{status} <> 0" for status in COUNTED)
    return (
        f"UPDATE {SESSION_TABLE} s SET {sets} FROM (SELECT session_name, {sums} FROM ({moves}) m "
        f"GROUP BY session_name) d WHERE s.name = d.session_name AND ({changed})"
    )


# PostgreSQL: statement-level triggers over the statement's transition tables, so a bulk
# insert of many plans (an import, a restore) updates each session row once. A row-level
# trigger updated the same session row once per plan, and in one transaction PostgreSQL
# walks every earlier version of the row on each update, so a bulk load slowed with every
# plan it added (docs/benchmarks.md).
# Each branch's statement is planned only when it runs, so it names only the transition
# tables its event has.
POSTGRES_SCHEMA = [
    f"""CREATE OR REPLACE FUNCTION {POSTGRES_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            {_pg_apply(_pg_moves("", "new_rows"))};
        ELSIF TG_OP = 'DELETE' THEN
            {_pg_apply(_pg_moves("-", "old_rows"))};
        ELSE
            {_pg_apply(_pg_moves("", "new_rows") + " UNION ALL " + _pg_moves("-", "old_rows"))};
        END IF;
        RETURN NULL;
    END $$""",
    # Names used by an earlier form of these triggers (row-level), gone if present.
    f"DROP TRIGGER IF EXISTS {POSTGRES_FUNCTION} ON {PLAN_TABLE}",
    f"DROP TRIGGER IF EXISTS {POSTGRES_FUNCTION}_moved ON {PLAN_TABLE}",
    f"DROP TRIGGER IF EXISTS {POSTGRES_FUNCTION}_ins ON {PLAN_TABLE}",
    f"""CREATE TRIGGER {POSTGRES_FUNCTION}_ins AFTER INSERT ON {PLAN_TABLE}
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {POSTGRES_FUNCTION}()""",
    f"DROP TRIGGER IF EXISTS {POSTGRES_FUNCTION}_upd ON {PLAN_TABLE}",
    f"""CREATE TRIGGER {POSTGRES_FUNCTION}_upd AFTER UPDATE ON {PLAN_TABLE}
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
        EXECUTE FUNCTION {POSTGRES_FUNCTION}()""",
    f"DROP TRIGGER IF EXISTS {POSTGRES_FUNCTION}_del ON {PLAN_TABLE}",
    f"""CREATE TRIGGER {POSTGRES_FUNCTION}_del AFTER DELETE ON {PLAN_TABLE}
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {POSTGRES_FUNCTION}()""",
]
POSTGRES_TRIGGERS = (f"{POSTGRES_FUNCTION}_ins", f"{POSTGRES_FUNCTION}_upd", f"{POSTGRES_FUNCTION}_del")


def _counted(status: str) -> Coalesce:
    """The number of plans in ``status`` of the session row the query is on (an expression)."""
    plans = Plan.objects.filter(session=OuterRef("pk"), status=status).order_by().values("session")
    return Coalesce(Subquery(plans.annotate(n=Count("*")).values("n")), 0)


def ensure_triggers(conn=None) -> None:
    """Create the counting triggers if missing; safe to run any number of times."""
    conn = conn or connection
    # Raw: triggers are schema the ORM does not make.
    with conn.cursor() as cur:
        if conn.vendor == "sqlite":
            for statement in SQLITE_TRIGGERS.values():
                cur.execute(statement)
        elif conn.vendor == "postgresql" and not _postgres_triggers_present(cur):
            for statement in POSTGRES_SCHEMA:
                cur.execute(statement)


def ensure_triggers_after_migrate(sender, using="default", **kwargs) -> None:
    from django.db import connections

    ensure_triggers(connections[using])


def triggers_present(conn=None) -> bool:
    conn = conn or connection
    # Raw: the database's own catalogue of triggers, which no model maps.
    with conn.cursor() as cur:
        if conn.vendor == "sqlite":
            cur.execute(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (%s, %s, %s)",
                list(SQLITE_TRIGGERS),
            )
            return cur.fetchone()[0] == len(SQLITE_TRIGGERS)
        return _postgres_triggers_present(cur)


def _postgres_triggers_present(cur) -> bool:
    cur.execute(
        "SELECT COUNT(*) FROM pg_trigger WHERE tgname = ANY(%s) AND NOT tgisinternal", [list(POSTGRES_TRIGGERS)]
    )
    return cur.fetchone()[0] == len(POSTGRES_TRIGGERS)


def drifted(session_name: str | None = None) -> dict[str, dict[str, tuple[int, int]]]:
    """Sessions whose counters differ from their plans: {name: {status: (kept, counted)}}."""
    sessions = Session.objects.order_by()
    if session_name is not None:
        sessions = sessions.filter(name=session_name)
    counted = {f"counted_{status}": _counted(status) for status in COUNTED}
    found: dict[str, dict[str, tuple[int, int]]] = {}
    for name, *values in sessions.annotate(**counted).values_list("name", *COLUMNS.values(), *counted):
        kept, counts = values[: len(COUNTED)], values[len(COUNTED) :]
        off = {s: (k, c) for s, k, c in zip(COUNTED, kept, counts, strict=True) if k != c}
        if off:
            found[name] = off
    return found


def recount(session_name: str | None = None) -> int:
    """Recompute the counters from the plans (of one session, or all); returns rows updated."""
    sessions = Session.objects.all()
    if session_name is not None:
        sessions = sessions.filter(name=session_name)
    return sessions.update(**{column: _counted(status) for status, column in COLUMNS.items()})
