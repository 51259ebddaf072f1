"""Two `manage.py mcp --transport http` processes on one PostgreSQL database, with clients
alternating between them: any process serves any session, and the races still hold (one
pull winner, no lost notes, unique positions) with real concurrent transactions in two
processes (docs/design.md, "Transactions and writer turns")."""

from __future__ import annotations

from collections import Counter
from contextlib import AsyncExitStack

import anyio
import pytest

from sessions_app import services
from sessions_app.models import Plan
from tests.conftest import plan_fields
from tests.mcp_bridge.helpers import in_thread, ok, plan_args
from tests.mcp_bridge.http_server import http_client, start_server  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.serial,
    pytest.mark.postgres,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
]

CLIENTS = 8


@pytest.fixture
def two_servers(start_server):
    return start_server(), start_server()


async def race(clients, call) -> list:
    """Calls ``call(client, i)`` for every client at once; the results in client order."""
    results: list = [None] * len(clients)
    go = anyio.Event()

    async def one(i, client):
        await go.wait()
        results[i] = await call(client, i)

    async with anyio.create_task_group() as tg:
        for i, client in enumerate(clients):
            tg.start_soon(one, i, client)
        await anyio.sleep(0)  # every task is waiting on the event before it is set
        go.set()
    return results


async def connected(stack: AsyncExitStack, servers) -> list:
    """CLIENTS clients, alternating between the servers, each past its handshake."""
    clients = [await stack.enter_async_context(http_client(servers[i % 2].url)) for i in range(CLIENTS)]
    for client in clients:
        await client.list_tools()
    return clients


def category(result) -> str:
    return result.structured_content.get("error", "ok") if result.is_error else "ok"


async def test_one_session_served_by_either_process(two_servers):
    a, b = two_servers
    async with http_client(a.url) as on_a, http_client(b.url) as on_b:
        name = (await on_a.call_tool("9plan_session_create", {})).structured_content["session_name"]
        ok(await on_b.call_tool("9plan_queue_add", plan_args(goal="first", session_name=name)), name)
        ok(await on_a.call_tool("9plan_queue_add", plan_args(goal="second", session_name=name)), name)
        pulled = ok(await on_b.call_tool("9plan_queue_pull", {"session_name": name}), name)
        ok(await on_a.call_tool("9plan_plan_note", {"text": "seen by A", "session_name": name}), name)
        ok(await on_b.call_tool("9plan_plan_complete", {"outcome": "done on B", "session_name": name}), name)
        found = ok(await on_a.call_tool("9plan_history_search", {"query": "done", "session_name": name}), name)
        assert [r["id"] for r in found["results"]] == [pulled["plan_id"]]
        state = ok(await on_b.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert [q["goal"] for q in state["queue"]] == ["second"]
    done = await in_thread(Plan.objects.get, id=pulled["plan_id"])
    assert (done.goal, done.notes, done.outcome, done.status) == ("first", "seen by A", "done on B", "completed")


async def test_racing_pulls_through_two_processes_have_one_winner(two_servers, session):
    for i in range(3):
        await in_thread(services.plan_enqueue, session_name=session.name, **plan_fields(goal=f"plan {i}"))
    async with AsyncExitStack() as stack:
        clients = await connected(stack, two_servers)
        for round_no in range(3):
            results = await race(clients, lambda c, i: c.call_tool("9plan_queue_pull", {"session_name": session.name}))
            outcomes = Counter(category(r) for r in results)
            assert outcomes == {"ok": 1, "PLAN_ALREADY_ACTIVE": CLIENTS - 1}, (round_no, outcomes)
            winner = next(r for r in results if not r.is_error).structured_content["plan_id"]
            active = await in_thread(
                lambda: list(Plan.objects.filter(session=session, status="active").values_list("id", flat=True))
            )
            assert active == [winner]
            done = await clients[round_no % 2].call_tool(
                "9plan_plan_complete", {"outcome": f"round {round_no}", "session_name": session.name}
            )
            ok(done, session.name)
    statuses = await in_thread(lambda: sorted(Plan.objects.filter(session=session).values_list("status", flat=True)))
    assert statuses == ["completed"] * 3


async def test_racing_notes_through_two_processes_are_all_kept(two_servers, session, sessions_dir):
    await in_thread(services.plan_enqueue, session_name=session.name, **plan_fields(goal="noted"))
    plan = await in_thread(services.plan_pull, session_name=session.name)
    local_copy = (sessions_dir / session.name / "plans" / f"{plan.id}.txt").read_text()
    async with AsyncExitStack() as stack:
        clients = await connected(stack, two_servers)
        results = await race(
            clients,
            lambda c, i: c.call_tool("9plan_plan_note", {"text": f"fragment {i}", "session_name": session.name}),
        )
        assert [category(r) for r in results] == ["ok"] * CLIENTS

        notes = (await in_thread(Plan.objects.get, id=plan.id)).notes
        fragments = notes.split("\n\n")
        assert sorted(fragments) == sorted(f"fragment {i}" for i in range(CLIENTS))
        # The HTTP servers keep no plan files (their agents are on other machines): this
        # machine's copy is left as it was, and the database holds every note.
        assert (sessions_dir / session.name / "plans" / f"{plan.id}.txt").read_text() == local_copy

        # An append racing a replace ends as one of the two serial outcomes.
        for attempt in range(3):
            results = await race(
                clients[:2],
                lambda c, i: c.call_tool(
                    "9plan_plan_note",
                    {"text": "replaced", "mode": "replace", "session_name": session.name}
                    if i == 0
                    else {"text": "appended", "session_name": session.name},
                ),
            )
            assert [category(r) for r in results] == ["ok", "ok"]
            notes = (await in_thread(Plan.objects.get, id=plan.id)).notes
            assert notes in ("replaced", "replaced\n\nappended"), (attempt, notes)


async def test_racing_adds_through_two_processes_keep_positions_unique(two_servers, session):
    async with AsyncExitStack() as stack:
        clients = await connected(stack, two_servers)
        results = await race(
            clients,
            lambda c, i: c.call_tool(
                "9plan_queue_add",
                plan_args(goal=f"plan {i}", position="front" if i % 2 else "back", session_name=session.name),
            ),
        )
    assert [category(r) for r in results] == ["ok"] * CLIENTS
    positions = await in_thread(
        lambda: list(Plan.objects.filter(session=session, status="queued").values_list("sort_key", flat=True))
    )
    assert len(positions) == CLIENTS and len(set(positions)) == CLIENTS
    order = await in_thread(
        lambda: list(Plan.objects.filter(session=session).order_by("sort_key").values_list("goal", flat=True))
    )
    # Fronts precede backs whatever the interleaving.
    fronts = [g for g in order if int(g.split()[1]) % 2]
    assert order[: len(fronts)] == fronts
