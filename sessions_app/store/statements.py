"""The statements the services run on every add, pull, note, defer and complete, written
out in SQL that SQLite and PostgreSQL both accept.

The ORM builds each statement anew on every call, which costs several times what running
it does, and a queue operation runs five to seven of them: building statements was most of
each operation's CPU time (docs/benchmarks.md). The services call its writes, inside
their write transaction; the hottest reads (the session state, history search) use
``load``. Everything else keeps using the ORM. Rows come back as model instances, so the
code that uses them reads the same.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models.base import ModelState

from sessions_app.store import driver

from sessions_app.store import event_feed

from sessions_app.webhooks import event_types as webhook_types
from sessions_app.store.prepared import SQL_ACTIVE, SQL_COMPLETED, SQL_QUEUED, fixed
from sessions_app.models import Event, LostClaim, Plan, PlanDependency, Session, WebhookDelivery, WebhookSubscription

PLANS = Plan._meta.db_table
DEPENDENCIES = PlanDependency._meta.db_table
LOST = LostClaim._meta.db_table
SESSIONS = Session._meta.db_table
EVENTS = Event._meta.db_table
SUBSCRIPTIONS = WebhookSubscription._meta.db_table
DELIVERIES = WebhookDelivery._meta.db_table

# What the services read and write of a plan. The timestamps are left out: the services
# set them and never read them, and Django loads a deferred one on first access if anyone
# does.
_PLAN_FIELDS = tuple(
    f
    for f in Plan._meta.concrete_fields
    if f.attname not in ("created_at", "updated_at", "completed_at", "discarded_at")
)
_LOCKED_SESSION_FIELDS = tuple(
    Session._meta.get_field(name)
    for name in (
        "name", "project", "count_queued", "count_completed", "count_discarded", "lease_seconds", "max_attempts", "review"
    )
)
_INSERT_FIELDS = list(Plan._meta.concrete_fields)
_INSERT_PLAN = (
    f"INSERT INTO {PLANS} ({', '.join(f.column for f in _INSERT_FIELDS)}) "
    f"VALUES ({', '.join(['%s'] * len(_INSERT_FIELDS))})"
)
_EVENT_DETAIL = Event._meta.get_field("detail")


_CONVERTERS: dict[tuple, tuple] = {}


def _sqlite_timestamp(value: Any, expression: Any, conn: Any) -> datetime | None:
    # What Django's SQLite converter does (parse_datetime tries fromisoformat first, and
    # make_aware of a zoneinfo zone is replace), without looking the settings up for
    # each value: a search's five plans have twenty timestamps, and that lookup was a
    # sizeable share of the search's cost above the query itself (docs/benchmarks.md).
    if value is None:
        return None
    # Text, or already a naive datetime when the column's declared type made the driver
    # parse it.
    parsed = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    zone = conn.timezone
    return parsed.replace(tzinfo=zone) if zone is not None and parsed.tzinfo is None else parsed


def _reading(conn, fields: tuple) -> tuple[tuple[str, ...], list[tuple[int, list, Any]]]:
    """For reading rows of ``fields``: their names, and (index, converter functions,
    expression) for the columns this database hands back in another type than the model's
    (timestamps, on SQLite). Worked out once per tuple of fields (they are module
    constants, looked up by identity: hashing nine fields cost more than the lookup)."""
    key = (conn.vendor, id(fields))
    entry = _CONVERTERS.get(key)
    if entry is None or entry[0] is not fields:
        converters = []
        for i, f in enumerate(fields):
            col = f.get_col(f.model._meta.db_table)
            if conn.vendor == "sqlite" and f.get_internal_type() == "DateTimeField":
                funcs = [_sqlite_timestamp]
            else:
                funcs = conn.ops.get_db_converters(col) + f.get_db_converters(conn)
            if funcs:
                converters.append((i, funcs, col))
        entry = (fields, tuple(f.attname for f in fields), converters)
        _CONVERTERS[key] = entry
    return entry[1], entry[2]


def load(model, fields: tuple, sql: str, params: list, *, extra: int = 0) -> list:
    """Run ``sql``, which selects the columns of ``fields`` (a module-level tuple of some of
    the model's fields, in the tuple's order) and then ``extra`` more values, and return
    each row as a model instance (the fields not selected are deferred), or as (instance,
    *extras) with ``extra``. What QuerySet.raw() does, for less (docs/benchmarks.md)."""
    conn = connections[DEFAULT_DB_ALIAS]
    rows = driver.rows(sql, params)
    attnames, converters = _reading(conn, fields)
    width = len(fields)
    alias = conn.alias
    found = []
    for row in rows:
        values = list(row[:width])
        for i, funcs, col in converters:
            for func in funcs:
                values[i] = func(values[i], col, conn)
        # Built as Django rebuilds an unpickled instance: the attributes set directly,
        # without __init__ (which walks every field and sends the init signals, none of
        # which 9plan's models have): a large share of a search's cost above its query. A field
        # not selected is absent, so it loads on first access, as a deferred field does.
        obj = model.__new__(model)
        obj.__dict__.update(zip(attnames, values))
        obj._state = ModelState()
        obj._state.adding = False
        obj._state.db = alias
        found.append((obj, *row[width:]) if extra else obj)
    return found


ALL_PLAN_FIELDS = tuple(Plan._meta.concrete_fields)


# What a search hit is read for (the tools, the admin and the REST API): its identity, the
# searched sections and when it was completed. The rest (the approach and notes above all,
# often the longest sections) loads on first access.
HIT_FIELDS = tuple(
    f
    for f in Plan._meta.concrete_fields
    if f.attname in ("id", "session_id", "status", "goal", "context", "inputs", "outputs", "outcome", "completed_at")
)
HIT_COLUMNS = ", ".join(f"p.{f.column}" for f in HIT_FIELDS)


def hits_with_score(sql: str, params: list) -> list[tuple[Plan, Any]]:
    """Run ``sql``, which selects HIT_COLUMNS then a score: each row as a Plan and its score."""
    return load(Plan, HIT_FIELDS, sql, params, extra=1)


def when(value: datetime) -> Any:
    """A timestamp as this database takes it as a parameter."""
    return connection.ops.adapt_datetimefield_value(value)


def session_for_write(name: str, *, lock: bool = True) -> Session | None:
    """The session row with its counts and options; on PostgreSQL also locked until the
    transaction ends when ``lock`` (on SQLite, BEGIN IMMEDIATE has already serialised the
    writers).

    The lock is FOR NO KEY UPDATE, what an UPDATE of the counts takes anyway, never FOR
    UPDATE: rows that refer to the session (events, plans) take a share of its key, which FOR
    UPDATE would wait for. A writer that inserted an event and then changed a plan's status
    would then strengthen its own lock while a pull waited for FOR UPDATE: a deadlock. The
    plans' row locks are the same for the same reason."""
    return _first(load(Session, _LOCKED_SESSION_FIELDS, _session_row(lock), [name]))


_SESSION_COLUMNS = ", ".join(f"s.{f.column}" for f in _LOCKED_SESSION_FIELDS)


def _session_row(lock: bool, also: str = "") -> str:
    lock_clause = " FOR NO KEY UPDATE" if lock and connection.vendor != "sqlite" else ""
    return f"SELECT {_SESSION_COLUMNS}{also} FROM {SESSIONS} s WHERE s.name = %s{lock_clause}"


def session_for_pull(name: str, now: datetime) -> tuple[Session, bool] | None:
    """The session row as ``session_for_write`` locks it, and whether a claim of the session
    ran out before ``now``, in one statement. On PostgreSQL the claims are read in the
    snapshot the statement began with, before it waited for the lock: a claim that runs out
    meanwhile is reclaimed by the next pull."""
    also = (
        f", EXISTS (SELECT 1 FROM {PLANS} p WHERE p.session_name = s.name AND p.status = {SQL_ACTIVE} "
        "AND p.lease_expires_at < %s)"
    )
    rows = load(Session, _LOCKED_SESSION_FIELDS, _session_row(True, also), [when(now), name], extra=1)
    if not rows:
        return None
    session, expiring = rows[0]
    return session, bool(expiring)


def _for_update(*, skip_locked: bool = False) -> str:
    """Row locks on PostgreSQL (SQLite's writers are serialised already). ``skip_locked``: a
    row another writer holds is passed over, never waited for: a writer holding the session
    row must never wait for a plan row (docs/design.md, "Transactions and writer turns")."""
    if connection.vendor == "sqlite":
        return ""
    return " FOR NO KEY UPDATE OF t SKIP LOCKED" if skip_locked else " FOR NO KEY UPDATE OF t"


_PLAN_COLUMNS = ", ".join(f"t.{f.column}" for f in _PLAN_FIELDS)


def _plans(condition: str, params: list) -> list[Plan]:
    """The plans (the table aliased ``t``) that meet ``condition``, which may end with an
    ORDER BY, a LIMIT and a lock clause; each with the fields of _PLAN_FIELDS."""
    return load(Plan, _PLAN_FIELDS, f"SELECT {_PLAN_COLUMNS} FROM {PLANS} t WHERE {condition}", params)


def _first(rows: list):
    return rows[0] if rows else None


def claimed_plan(
    session_name: str, claimant: str, worker: str, also: tuple[str, list]
) -> tuple[Plan, int, str, Any] | None:
    """The plan ``worker`` of ``claimant`` holds in the session (locked on PostgreSQL, so a
    reclaim passes it over while its holder writes), the session's lease length, its project
    and the value of ``also`` (SQL over the plan, aliased ``t``, and its parameters); None if
    it holds none."""
    value, value_params = also
    rows = load(
        Plan,
        _PLAN_FIELDS,
        f"SELECT {_PLAN_COLUMNS}, s.lease_seconds, s.project_name, {value} FROM {PLANS} t JOIN {SESSIONS} s "
        "ON s.name = t.session_name "
        f"WHERE t.session_name = %s AND t.status = {SQL_ACTIVE} AND t.claimant = %s AND t.worker = %s{_for_update()}",
        [*value_params, session_name, claimant, worker],
        extra=3,
    )
    return _first(rows)


def claimed_plan_id(session_name: str, claimant: str, worker: str) -> str | None:
    """The id of the plan the worker holds."""
    found = _claimed(session_name, claimant, worker)
    return None if found is None else found[0]


def claimed_file_stem(session_name: str, claimant: str, worker: str) -> str | None:
    """The name of the plan file (``Plan.file_stem``) of the plan the worker holds."""
    found = _claimed(session_name, claimant, worker)
    return None if found is None else Plan(id=found[0], reclaims=found[1]).file_stem


def _claimed(session_name: str, claimant: str, worker: str) -> tuple[str, int] | None:
    return driver.first(
        f"SELECT id, reclaims FROM {PLANS} WHERE session_name = %s AND status = {SQL_ACTIVE} AND claimant = %s "
        "AND worker = %s",
        [session_name, claimant, worker],
    )


def claim_holder(plan_id: str) -> str | None:
    """The worker holding the plan (its name), if it is active."""
    row = driver.first(f"SELECT worker FROM {PLANS} WHERE id = %s AND status = {SQL_ACTIVE}", [plan_id])
    return None if row is None else row[0]


def plan_for_write(session_name: str, plan_id: str) -> tuple[Plan, str] | None:
    """One plan of the session by id (locked on PostgreSQL) and the session's project."""
    rows = load(
        Plan,
        _PLAN_FIELDS,
        f"SELECT {_PLAN_COLUMNS}, s.project_name FROM {PLANS} t JOIN {SESSIONS} s ON s.name = t.session_name "
        f"WHERE t.session_name = %s AND t.id = %s{_for_update()}",
        [session_name, plan_id],
        extra=1,
    )
    return _first(rows)


def dependent_for_write(session_name: str, plan_id: str) -> Plan | None:
    """A plan of the session by id, locked on PostgreSQL: a dependent of a plan being
    discarded, in the discard's transaction (its session was entered already)."""
    return _first(_plans(f"t.session_name = %s AND t.id = %s{_for_update()}", [session_name, plan_id]))


# A queued plan (the table aliased t) is ready when no person must act first and every
# plan it depends on is completed. Walks the queue in order along the (session, status,
# sort_key) index, so the first ready plan is found after the blocked ones ahead of it only.
READY = (
    f"NOT t.waiting_for_person AND NOT EXISTS (SELECT 1 FROM {DEPENDENCIES} d JOIN {PLANS} q "
    f"ON q.id = d.depends_on_id WHERE d.plan_id = t.id AND q.status <> {SQL_COMPLETED})"
)


def expired_claims(session_name: str, now: datetime) -> list[Plan]:
    """The session's active plans whose lease ran out before ``now``, oldest claim first
    (on PostgreSQL, a plan whose holder is writing right now is passed over: that write
    renews it)."""
    return _plans(
        f"t.session_name = %s AND t.status = {SQL_ACTIVE} AND t.lease_expires_at < %s "
        f"ORDER BY t.lease_expires_at, t.id{_for_update(skip_locked=True)}",
        [session_name, when(now)],
    )


def sessions_with_expired_claims(now: datetime) -> list[str]:
    found = driver.rows(
        f"SELECT DISTINCT session_name FROM {PLANS} WHERE status = {SQL_ACTIVE} AND lease_expires_at < %s",
        [when(now)],
    )
    return [row[0] for row in found]


def renew(plan_id: str, until: datetime) -> None:
    driver.run(f"UPDATE {PLANS} SET lease_expires_at = %s WHERE id = %s", [when(until), plan_id])


def lost_claim(session_name: str, claimant: str, worker: str) -> tuple[str, datetime] | None:
    """The plan ``worker`` last lost in the session and when, if it has not pulled since."""
    row = driver.first(
        f"SELECT plan_id, lost_at FROM {LOST} WHERE session_name = %s AND claimant = %s AND worker = %s",
        [session_name, claimant, worker],
    )
    if row is None:
        return None
    lost_at = row[1]
    if not isinstance(lost_at, datetime):
        lost_at = _sqlite_timestamp(lost_at, None, connection)
    elif lost_at.tzinfo is None and connection.timezone is not None:
        lost_at = lost_at.replace(tzinfo=connection.timezone)
    return row[0], lost_at


def record_lost_claim(session_name: str, claimant: str, worker: str, plan_id: str, at: datetime) -> None:
    forget_lost_claim(session_name, claimant, worker)
    driver.run(
        f"INSERT INTO {LOST} (session_name, claimant, worker, plan_id, lost_at) VALUES (%s, %s, %s, %s, %s)",
        [session_name, claimant, worker, plan_id, when(at)],
    )


# What a pull reads of its worker: the plan it holds (or NULL), and whether it lost a claim
# it has not been told of.
_WORKER_BEFORE_CLAIM = (
    f"(SELECT id FROM {PLANS} WHERE session_name = %s AND status = {SQL_ACTIVE} AND claimant = %s AND worker = %s), "
    f"EXISTS (SELECT 1 FROM {LOST} WHERE session_name = %s AND claimant = %s AND worker = %s)"
)


def _worker_before_claim_params(session_name: str, claimant: str, worker: str) -> list:
    return [session_name, claimant, worker, session_name, claimant, worker]


def worker_before_claim(session_name: str, claimant: str, worker: str) -> tuple[str | None, bool]:
    """The plan the worker holds (or None), and whether it lost a claim it has not been
    told of, in one statement."""
    holding, lost = driver.first(
        f"SELECT {_WORKER_BEFORE_CLAIM}", _worker_before_claim_params(session_name, claimant, worker)
    )
    return holding, bool(lost)


def pull_candidate(session_name: str, claimant: str, worker: str) -> tuple[Plan | None, str | None, bool, bool]:
    """What a pull reads under the session's lock: the first ready plan in queue order,
    locked on PostgreSQL (rows held by other writers are passed over: such a plan is being
    changed, not waiting to be pulled), None when the worker holds one; the plan the worker
    holds; whether it lost a claim (as ``worker_before_claim``); and whether the ready plan
    depends on others (its answer then shows what they produced). One statement when a
    plan is ready, the common case; two when none is."""
    rows = load(
        Plan,
        _PLAN_FIELDS,
        f"SELECT {_PLAN_COLUMNS}, {_WORKER_BEFORE_CLAIM}, "
        f"EXISTS (SELECT 1 FROM {DEPENDENCIES} d WHERE d.plan_id = t.id) FROM {PLANS} t "
        f"WHERE t.session_name = %s AND t.status = {SQL_QUEUED} AND {READY} "
        f"ORDER BY t.sort_key LIMIT 1{_for_update(skip_locked=True)}",
        [*_worker_before_claim_params(session_name, claimant, worker), session_name],
        extra=3,
    )
    if not rows:
        return None, *worker_before_claim(session_name, claimant, worker), False
    plan, holding, lost, depends = rows[0]
    return (None if holding else plan), holding, bool(lost), bool(depends)


def forget_lost_claim(session_name: str, claimant: str, worker: str) -> None:
    driver.run(f"DELETE FROM {LOST} WHERE session_name = %s AND claimant = %s AND worker = %s", [session_name, claimant, worker])


def insert_dependencies(pairs: list[tuple[str, str]]) -> None:
    """(plan, depends_on) rows."""
    if not pairs:
        return
    driver.run_many(f"INSERT INTO {DEPENDENCIES} (plan_id, depends_on_id) VALUES (%s, %s)", pairs)


def plan_in(session_name: str, status: str, *, first_in_queue: bool = False) -> Plan | None:
    """A plan of the session in ``status`` (the front one, for the queue)."""
    order = " ORDER BY t.sort_key LIMIT 1" if first_in_queue else " LIMIT 1"
    return _first(_plans(f"t.session_name = %s AND t.status = {fixed(status)}{order}", [session_name]))


def active_plan_id(session_name: str) -> str | None:
    row = driver.first(f"SELECT id FROM {PLANS} WHERE session_name = %s AND status = {SQL_ACTIVE} LIMIT 1", [session_name])
    return None if row is None else row[0]


def end_of_queue(session_name: str, *, front: bool) -> int | None:
    """The lowest (front) or highest queue position in use; one end of the index, read directly."""
    direction = "ASC" if front else "DESC"
    row = driver.first(
        f"SELECT sort_key FROM {PLANS} WHERE session_name = %s AND status = {SQL_QUEUED} "
        f"ORDER BY sort_key {direction} LIMIT 1",
        [session_name],
    )
    return None if row is None else row[0]


def plan_id_taken(plan_id: str) -> bool:
    return driver.first(f"SELECT 1 FROM {PLANS} WHERE id = %s", [plan_id]) is not None


# A parameter of each field's own Python type passes as it is, which is what Django's
# get_db_prep_save makes of it; any other value (and each timestamp's conversion) goes
# through Django. Asking Django for every field cost 42 µs of a plan's insert.
_AS_IT_IS = {
    "CharField": str, "TextField": str, "BooleanField": bool,
    "IntegerField": int, "BigIntegerField": int, "PositiveIntegerField": int, "BigAutoField": int,
}


def _parameter(field) -> Callable[[Any, Any], Any]:
    """(value, connection) -> the value as a parameter of a statement writing ``field``."""
    own = field.target_field if field.is_relation else field
    kind = _AS_IT_IS.get(own.get_internal_type())
    if kind is not None:
        return lambda value, conn: value if value is None or type(value) is kind else field.get_db_prep_save(value, conn)
    if own.get_internal_type() == "DateTimeField":
        return lambda value, conn: (
            conn.ops.adapt_datetimefield_value(value)
            if value is None or (type(value) is datetime and value.tzinfo is not None)
            else field.get_db_prep_save(value, conn)
        )
    return field.get_db_prep_save


_INSERT_PARAMETERS = tuple((f.attname, _parameter(f)) for f in _INSERT_FIELDS)
_UPDATES: dict[tuple[str, ...], tuple[str, tuple]] = {}


def insert_plan(plan: Plan) -> None:
    conn = connections[DEFAULT_DB_ALIAS]
    driver.run(_INSERT_PLAN, [adapt(getattr(plan, name), conn) for name, adapt in _INSERT_PARAMETERS])
    plan._state.adding = False
    plan._state.db = conn.alias


def update_plan(plan: Plan, names: tuple[str, ...], *, only_if_status: str | None = None) -> int:
    """Write ``names`` of the plan's loaded fields; with ``only_if_status`` only while the row
    still has that status (a compare-and-set). Returns how many rows changed (0 or 1)."""
    update = _UPDATES.get(names)
    if update is None:
        fields = [Plan._meta.get_field(name) for name in names]
        sets = ", ".join(f"{f.column} = %s" for f in fields)
        update = _UPDATES[names] = (f"UPDATE {PLANS} SET {sets} WHERE id = %s", tuple((f.attname, _parameter(f)) for f in fields))
    sql, parameters = update
    conn = connections[DEFAULT_DB_ALIAS]
    values = [adapt(getattr(plan, name), conn) for name, adapt in parameters]
    values.append(plan.id)
    if only_if_status is not None:
        sql += f" AND status = {fixed(only_if_status)}"
    return driver.run(sql, values)


_INSERT_EVENT = (
    f"INSERT INTO {EVENTS} (session_name, plan_id, kind, actor, detail, created_at) VALUES (%s, %s, %s, %s, %s, %s)"
)
# The outbox (docs/design.md, "Webhooks"): one message per subscription of the session's
# project to the event's type, written with the event, so an event is never recorded without
# its messages nor a message without its event. With no subscription it inserts nothing, in
# one statement on the subscriptions' (project, active) index.
_INTO_DELIVERIES = (
    f"INSERT INTO {DELIVERIES} (subscription_id, event_id, event_type, status, attempts, next_attempt_at, "
    "last_error, created_at) "
)
# The subscriptions of the session's project that take a type: all types, or the type
# between commas in event_types (``pattern``, the SQL of its LIKE pattern: _type_pattern).
_OF_PROJECT = f"w.project_name = (SELECT project_name FROM {SESSIONS} WHERE name = %s) AND w.active = %s"
_SUBSCRIBED = _OF_PROJECT + " AND (w.event_types = %s OR w.event_types LIKE {pattern} ESCAPE '!')"
_INSERT_DELIVERIES = (
    f"{_INTO_DELIVERIES}SELECT w.id, %s, %s, %s, 0, %s, '', %s FROM {SUBSCRIPTIONS} w "
    f"WHERE {_SUBSCRIBED.format(pattern='%s')}"
)
# A queue empties when the event's plan (not yet changed: the event is written first) was
# queued or active and no other plan of the session is.
_IF_LAST_OPEN = (
    f" AND EXISTS (SELECT 1 FROM {PLANS} WHERE id = %s AND status IN ({SQL_QUEUED}, {SQL_ACTIVE}))"
    f" AND NOT EXISTS (SELECT 1 FROM {PLANS} WHERE session_name = %s AND status IN ({SQL_QUEUED}, {SQL_ACTIVE})"
    " AND id <> %s)"
)


# SQLite: the event's id, and whether the session's project has any active subscription.
_RETURNING_ID_IF_SUBSCRIBED = f" RETURNING id, EXISTS (SELECT 1 FROM {SUBSCRIPTIONS} w WHERE {_OF_PROJECT})"


def _type_pattern(event_type: str) -> str:
    # Each type sits between commas; "_" is LIKE's any-character, so it is escaped.
    return "%," + event_type.replace("_", "!_") + ",%"


def _subscribed_params(session_name: str) -> list:
    return [session_name, True, WebhookSubscription.ALL]


def _last_open_params(session_name: str, plan_id: str) -> list:
    return [plan_id, session_name, plan_id]


# On PostgreSQL the feed's shared lock, the event and its outbox messages are one statement:
# one round trip instead of two to four. The lock is taken in the subquery the event's row
# is read from, so it is held before the row's id is drawn (event_feed.py says why that
# order matters). The types and their patterns come as arrays.
_PG_LOCKED_EVENT = (
    f"INSERT INTO {EVENTS} (session_name, plan_id, kind, actor, detail, created_at) "
    "SELECT %s, %s, %s, %s, %s, %s FROM (SELECT pg_advisory_xact_lock_shared(%s)) AS feed"
)
_PG_EVENT_AND_DELIVERIES = (
    f"WITH e AS ({_PG_LOCKED_EVENT} RETURNING id) "
    f"{_INTO_DELIVERIES}SELECT w.id, e.id, t.event_type, %s, 0, %s, '', %s FROM e "
    f"CROSS JOIN unnest(%s::text[], %s::text[]) AS t(event_type, pattern) JOIN {SUBSCRIPTIONS} w "
    f"ON {_SUBSCRIBED.format(pattern='t.pattern')} WHERE t.event_type <> %s OR (TRUE{_IF_LAST_OPEN})"
)


def _insert_event_postgresql(values: list, types: tuple[str, ...], session_name: str, plan_id: str | None) -> None:
    locked = [*values, event_feed.FEED_LOCK_KEY]
    if plan_id is None:
        types = tuple(t for t in types if t != webhook_types.QUEUE_EMPTIED)
    if not types:
        driver.run(_PG_LOCKED_EVENT, locked)
        return
    at = values[-1]
    driver.run(
        _PG_EVENT_AND_DELIVERIES,
        [
            *locked, WebhookDelivery.Status.PENDING, at, at, list(types), [_type_pattern(t) for t in types],
            *_subscribed_params(session_name), webhook_types.QUEUE_EMPTIED, *_last_open_params(session_name, plan_id),
        ],
    )


def insert_event(
    session_name: str, kind: str, actor: str, plan_id: str | None, detail: dict, at: datetime
) -> None:
    """The event, and in the same transaction its webhook messages (the outbox)."""
    values = [session_name, plan_id, kind, actor, _EVENT_DETAIL.get_db_prep_save(detail, connection), when(at)]
    types = webhook_types.types_of(kind, detail)
    if connection.vendor == "postgresql":
        if not connection.in_atomic_block:
            event_feed.before_event_write(connection.alias)  # warns: the feed may skip it
        _insert_event_postgresql(values, types, session_name, plan_id)
        return
    if not types:
        driver.run(_INSERT_EVENT, values)
        return
    if connection.features.can_return_columns_from_insert:
        # Whether the session's project has any active subscription comes back with the
        # event's id: without one (the common case) there is no message to write, and no
        # second statement. The transaction holds SQLite's write lock, so none is added in
        # between.
        event_id, subscribed = driver.first(_INSERT_EVENT + _RETURNING_ID_IF_SUBSCRIBED, [*values, session_name, True])
        if not subscribed:
            return
    else:
        event_id = driver.last_id(_INSERT_EVENT, values)
    for event_type in types:
        sql = _INSERT_DELIVERIES
        params = [
            event_id, event_type, WebhookDelivery.Status.PENDING, when(at), when(at),
            *_subscribed_params(session_name), _type_pattern(event_type),
        ]
        if event_type == webhook_types.QUEUE_EMPTIED:
            if plan_id is None:
                continue
            sql += _IF_LAST_OPEN
            params += _last_open_params(session_name, plan_id)
        driver.run(sql, params)
