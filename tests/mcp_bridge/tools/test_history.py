"""9plan_history_search and 9plan_history_get through the in-memory client."""

from __future__ import annotations

import pytest

from sessions_app import services
from tests.conftest import plan_fields
from tests.mcp_bridge.helpers import error, in_thread, ok, plan_args, snapshot, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def finish(client, goal: str, outcome: str, **extra) -> str:
    """Add a plan at the front, pull it and complete it; returns its id."""
    r = await client.call_tool("9plan_queue_add", plan_args(goal=goal, position="front", **extra))
    plan_id = r.structured_content["plan_id"]
    assert (await client.call_tool("9plan_queue_pull", {})).structured_content["plan_id"] == plan_id
    assert not (await client.call_tool("9plan_plan_complete", {"outcome": outcome})).is_error
    return plan_id


@pytest.fixture
async def corpus(client):
    name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    ids = {
        "invoice": await finish(
            client,
            "Invoice model",
            "Invoice and invoice line models; invoice totals in cents",
            outputs="invoice models",
        ),
        "payment": await finish(client, "Payment gateway", "Stripe client wrapper; refunds for an invoice"),
        "emails": await finish(client, "Email templates", "Templates for receipts and reminders"),
    }
    return name, ids


async def test_search_ranks_by_relevance(client, corpus):
    name, ids = corpus
    data = ok(await client.call_tool("9plan_history_search", {"query": "invoice"}), name)
    results = data["results"]
    assert [r["id"] for r in results] == [ids["invoice"], ids["payment"]]
    assert [r["relevance_rank"] for r in results] == [1, 2]
    assert results[0] == {
        "id": ids["invoice"],
        "goal": "Invoice model",
        "outcome": "Invoice and invoice line models; invoice totals in cents",
        "relevance_rank": 1,
    }


async def test_search_puts_plans_matching_every_word_first_then_partial_matches(client, corpus):
    name, ids = corpus
    results = ok(await client.call_tool("9plan_history_search", {"query": "refunds invoice"}), name)["results"]
    assert [r["id"] for r in results] == [ids["payment"], ids["invoice"]]
    # No plan has every word, yet the best partial match is still returned.
    results = ok(await client.call_tool("9plan_history_search", {"query": "reminders kubernetes"}), name)["results"]
    assert [r["id"] for r in results] == [ids["emails"]]


async def test_search_respects_max_results(client, corpus):
    name, ids = corpus
    results = ok(await client.call_tool("9plan_history_search", {"query": "invoice", "max_results": 1}), name)[
        "results"
    ]
    assert [r["id"] for r in results] == [ids["invoice"]]
    for bad in [0, 9, -1]:
        data = error(
            await client.call_tool("9plan_history_search", {"query": "invoice", "max_results": bad}),
            "VALIDATION_ERROR",
            name,
            field="max_results",
        )
        assert "1 to 8" in data["message"]


async def test_search_survives_hostile_queries(client, corpus, sessions_dir):
    name, _ = corpus
    before = await in_thread(snapshot, sessions_dir)
    for query in ['"foo', "foo AND", "NEAR(", "*", "-x", "col:val", "(", "it's", "c++", "🎉", "'; DROP TABLE x; --"]:
        data = ok(await client.call_tool("9plan_history_search", {"query": query}), name)
        assert isinstance(data["results"], list)
    for blank in ["", "  \u3000"]:
        error(await client.call_tool("9plan_history_search", {"query": blank}), "VALIDATION_ERROR", name, field="query")
    assert await in_thread(snapshot, sessions_dir) == before


async def test_search_sees_only_completed_plans_of_the_session(client, corpus, other_session):
    name, ids = corpus
    # A queued plan and a discarded one with the same word are not history.
    await client.call_tool("9plan_queue_add", plan_args(goal="Invoice PDF export"))
    await client.call_tool("9plan_queue_add", plan_args(goal="Invoice CSV export", position="front"))
    await client.call_tool("9plan_queue_pull", {})
    await client.call_tool("9plan_plan_discard", {"reason": "CSV export dropped"})
    results = ok(await client.call_tool("9plan_history_search", {"query": "export"}), name)["results"]
    assert results == []
    # The other session searches its own history only.
    theirs = ok(
        await client.call_tool("9plan_history_search", {"query": "invoice", "session_name": other_session.name}),
        other_session.name,
    )
    assert theirs["results"] == []
    ok(await client.call_tool("9plan_admin_state", {}), name)


async def test_history_get_returns_the_whole_completed_plan(client, corpus):
    name, ids = corpus
    data = ok(await client.call_tool("9plan_history_get", {"plan_id": ids["invoice"]}), name)
    completed_at = data.pop("completed_at")
    assert completed_at and completed_at.endswith("+00:00")
    assert data == {
        "session_name": name,
        "plan_id": ids["invoice"],
        "context": "Porting the billing service",
        "goal": "Invoice model",
        "inputs": "",
        "outputs": "invoice models",
        "approach": "1. Read the schema\n2. Write the models",
        "success_criteria": "Migrations apply; tests pass",
        "notes": "",
        "outcome": "Invoice and invoice line models; invoice totals in cents",
    }


async def test_history_get_refuses_plans_that_are_not_completed_history(client, corpus, other_session):
    name, ids = corpus
    queued = (await client.call_tool("9plan_queue_add", plan_args(goal="Later"))).structured_content["plan_id"]
    data = error(await client.call_tool("9plan_history_get", {"plan_id": queued}), "PLAN_NOT_FOUND", name)
    assert "queued" in data["message"]
    error(await client.call_tool("9plan_history_get", {"plan_id": "zzzzz"}), "PLAN_NOT_FOUND", name)
    # Another session's plan is not found through this one, but is through its own name.
    error(
        await client.call_tool("9plan_history_get", {"plan_id": ids["invoice"], "session_name": other_session.name}),
        "PLAN_NOT_FOUND",
        other_session.name,
    )
    for bad in ["ABCDE", "../x1", "abcd", "abcdef", "ab/cd"]:
        data = error(
            await client.call_tool("9plan_history_get", {"plan_id": bad}), "VALIDATION_ERROR", name, field="plan_id"
        )
        assert "5 characters" in data["message"]


def _in_other_project(goal: str, outcome: str) -> str:
    """A session of another project with one completed plan; returns the plan's id."""
    services.project_create(name="elsewhere")
    other = services.session_create(task_description="Other team", project="elsewhere")
    services.plan_enqueue(session_name=other.name, **plan_fields(goal=goal))
    services.plan_pull(session_name=other.name)
    return services.plan_complete(session_name=other.name, outcome=outcome).plan.id


async def test_scope_project_searches_every_session_of_the_project_naming_each_hit(client, corpus):
    first, ids = corpus
    foreign = await in_thread(_in_other_project, "Invoice numbering", "invoice numbers per team")
    second = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    mine = await finish(client, "Invoice PDF", "invoice rendered to PDF")

    # The default is the current session alone, and its hits name no session.
    alone = ok(await client.call_tool("9plan_history_search", {"query": "invoice"}), second)["results"]
    assert [r["id"] for r in alone] == [mine] and "session" not in alone[0]

    r = await client.call_tool("9plan_history_search", {"query": "invoice", "scope": "project"})
    data = ok(r, second)
    hits = {r["id"]: r["session"] for r in data["results"]}
    assert hits == {mine: second, ids["invoice"]: first, ids["payment"]: first}
    assert foreign not in hits
    assert [r["relevance_rank"] for r in data["results"]] == [1, 2, 3]
    assert "its session as session_name" in text_of(r)
    # A hit of another session is read through that session's name.
    got = ok(await client.call_tool("9plan_history_get", {"plan_id": ids["payment"], "session_name": first}), first)
    assert got["goal"] == "Payment gateway"
