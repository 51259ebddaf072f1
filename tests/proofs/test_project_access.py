"""Proves that every MCP tool, REST endpoint and admin page and action lets each role do
exactly what it may inside its project, and that outside it every one answers not found
(or 403) and leaves the database and the sessions folder exactly as they were.

Two projects, alpha and beta, each with a session holding a plan in every state that
matters (queued, active, in review, held, completed, discarded). Members of alpha, one for
each role, call through the real edges: MCP over HTTP with their tokens (a real server
process), REST with their REST tokens, the admin signed in."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from mcp_bridge import auth
from sessions_app import services
from sessions_app.models import Event, Membership, Plan
from tests.conftest import plan_fields
from tests.mcp_bridge.helpers import in_thread
from tests.mcp_bridge.http_server import post_tool, start_server  # noqa: F401 (a fixture)
from tests.sessions_app.conftest import db_rows, tree

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROLES = ("reader", "agent", "reviewer", "manager")
SECRET = "zanzibar"


def _session(project: str, settings) -> dict:
    """A session of ``project`` with a plan in each state; returns the session and plans."""
    session = services.session_create(task_description=f"work of {project}", project=project)
    name = session.name
    made = {}
    for key in ("review", "held", "done", "dropped", "active", "queued"):
        made[key] = services.plan_enqueue(
            session_name=name,
            position="back",
            review=key in ("review", "held"),
            **plan_fields(goal=f"{key} of {project}", context=f"{SECRET} {project}"),
        ).plan
    for key in ("review", "held", "done", "dropped"):
        services.plan_pull(session_name=name)
        if key == "dropped":
            services.plan_discard(session_name=name, reason="not needed")
        else:
            services.plan_complete(session_name=name, outcome=f"{SECRET} outcome of {key}")
    for _ in range(settings.NINEPLAN_MAX_REJECTIONS):
        services.plan_review(session_name=name, plan_id=made["held"].id, decision="reject", notes="No.", actor="x")
        if Plan.objects.get(id=made["held"].id).status != "held":
            services.plan_pull(session_name=name)
            services.plan_complete(session_name=name, outcome="again")
    services.plan_pull(session_name=name)  # "active", by the local default worker
    plans = {key: Plan.objects.get(id=plan.id) for key, plan in made.items()}
    assert plans["held"].status == "held" and plans["review"].status == "in_review"
    assert plans["active"].status == "active" and plans["queued"].status == "queued"
    return {"name": name, **plans}


@pytest.fixture
def world(transactional_db, settings, sessions_dir):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for project in ("alpha", "beta"):
        services.project_create(name=project)
    people = {}
    for role in ROLES:
        username = f"{role}-of-alpha"
        services.project_grant(project="alpha", username=username, role=role)
        people[role] = {
            "user": Membership.objects.get(user__username=username).user,
            "mcp": auth.token_create(name=f"{role}-laptop", user=username),
        }
        people[role]["rest"] = Token.objects.create(user=people[role]["user"]).key
    return {"inside": _session("alpha", settings), "outside": _session("beta", settings), "people": people}


def snapshot(sessions_dir) -> dict:
    rows = db_rows()
    rows.pop("fts", None)  # the index follows the plans, which are compared
    return {"db": rows, "files": tree(sessions_dir)}


# --- MCP over HTTP --------------------------------------------------------------------------

ADD_TOOLS = ("9plan_queue_add", "9plan_queue_add_batch")
READ_TOOLS = (
    "9plan_session_resume",
    "9plan_history_search",
    "9plan_history_get",
    "9plan_admin_validate",
    "9plan_admin_state",
)


def tool_calls(s: dict) -> list[tuple[str, dict]]:
    """Every tool with arguments that name session ``s`` (and a plan of it)."""
    name = s["name"]
    add = plan_fields(goal="planted", session_name=name)
    return [
        ("9plan_session_resume", {"session_name": name}),
        ("9plan_history_search", {"query": SECRET, "session_name": name}),
        ("9plan_history_search", {"query": SECRET, "session_name": name, "scope": "project"}),
        ("9plan_history_get", {"plan_id": s["done"].id, "session_name": name}),
        ("9plan_admin_validate", {"session_name": name}),
        ("9plan_admin_state", {"session_name": name}),
        ("9plan_queue_add", add),
        ("9plan_queue_add_batch", {"plans": [plan_fields(goal="planted")], "session_name": name}),
        ("9plan_queue_pull", {"session_name": name, "worker": "w1"}),
        ("9plan_plan_note", {"text": "planted", "session_name": name}),
        ("9plan_plan_renew", {"session_name": name}),
        ("9plan_plan_defer", {"reason": "planted", "session_name": name}),
        ("9plan_plan_complete", {"outcome": "planted", "session_name": name}),
        ("9plan_plan_discard", {"reason": "planted", "session_name": name}),
    ]


def call(url: str, token: str, name: str, arguments: dict) -> dict:
    code, _, body = post_tool(url, name, arguments, {"Authorization": f"Bearer {token}"})
    assert code == 200, body
    text = body.decode()
    if not text.lstrip().startswith("{"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)["result"]


def category(result: dict) -> str | None:
    return result["structuredContent"].get("error") if result.get("isError") else None


@pytest.mark.anyio
async def test_mcp_tools_outside_the_project_answer_not_found_and_change_nothing(world, start_server, sessions_dir):
    server = start_server()
    outside = world["outside"]
    missing_text = None
    for role in ROLES:
        token = world["people"][role]["mcp"]
        before = await in_thread(snapshot, sessions_dir)
        for tool, arguments in tool_calls(outside):
            result = call(server.url, token, tool, arguments)
            assert category(result) == "SESSION_NOT_FOUND", (role, tool, result)
            message = result["structuredContent"]["message"]
            assert SECRET not in json.dumps(result), (role, tool)
            # The same words as for a session that does not exist.
            gone = call(server.url, token, tool, {**arguments, "session_name": "calm-blue-heron"})
            assert message == gone["structuredContent"]["message"].replace("calm-blue-heron", outside["name"])
            missing_text = message
        listed = call(server.url, token, "9plan_admin_sessions", {})["structuredContent"]
        assert [s["name"] for s in listed["sessions"]] == [world["inside"]["name"]], role
        refused = call(server.url, token, "9plan_session_create", {"project": "beta"})
        assert category(refused) in ("VALIDATION_ERROR", "PERMISSION_DENIED"), (role, refused)
        assert "beta" not in refused["structuredContent"]["message"].split("yours")[-1]
        assert await in_thread(snapshot, sessions_dir) == before, role
    assert missing_text


def plans_but_planted() -> list[dict]:
    return [p for p in db_rows()["plans"] if p["goal"] != "planted"]


@pytest.mark.anyio
@pytest.mark.parametrize("role", ["reader", "reviewer", "manager"])
async def test_mcp_write_tools_need_the_agent_role_inside(world, start_server, sessions_dir, role):
    server = start_server()
    token, inside = world["people"][role]["mcp"], world["inside"]
    before = await in_thread(snapshot, sessions_dir)
    plans_before = await in_thread(plans_but_planted)
    may_add = role == "manager"
    for tool, arguments in tool_calls(inside):
        result = call(server.url, token, tool, arguments)
        if tool in READ_TOOLS or (may_add and tool in ADD_TOOLS):
            assert category(result) is None, (role, tool, result)
        else:
            assert category(result) == "PERMISSION_DENIED", (role, tool, result)
            message = result["structuredContent"]["message"]
            needed = "'agent' or 'manager' role" if tool in ADD_TOOLS else "'agent' role"
            assert "project 'alpha'" in message and needed in message, message
    created = call(server.url, token, "9plan_session_create", {"project": "alpha"})
    assert category(created) == (None if may_add else "PERMISSION_DENIED")
    assert SECRET in json.dumps(
        call(server.url, token, "9plan_history_search", {"query": SECRET, "session_name": inside["name"]})
    )
    if may_add:
        # The plans it added are all that changed of the project's plans.
        assert await in_thread(plans_but_planted) == plans_before
        assert await in_thread(lambda: Plan.objects.filter(goal="planted").count()) == 2
    else:
        assert await in_thread(snapshot, sessions_dir) == before


@pytest.mark.anyio
async def test_a_search_of_the_project_finds_its_own_projects_plans_only(world, start_server):
    server = start_server()
    inside, outside = world["inside"], world["outside"]
    for role in ROLES:
        arguments = {"query": SECRET, "session_name": inside["name"], "scope": "project"}
        found = call(server.url, world["people"][role]["mcp"], "9plan_history_search", arguments)
        hits = found["structuredContent"]["results"]
        assert [(h["id"], h["session"]) for h in hits] == [(inside["done"].id, inside["name"])], role
        assert outside["done"].id not in json.dumps(found), role


@pytest.mark.anyio
async def test_an_agent_inside_uses_every_tool(world, start_server, sessions_dir):
    server = start_server()
    token, inside = world["people"]["agent"]["mcp"], world["inside"]
    name = inside["name"]
    for tool, arguments in tool_calls(inside):
        if tool in ("9plan_plan_complete", "9plan_plan_discard"):
            continue  # the plan was deferred just before; pulled again below
        arguments = {k: v for k, v in arguments.items() if k != "worker"}
        assert category(call(server.url, token, tool, arguments)) is None, tool
    for last in ("9plan_plan_complete", "9plan_plan_discard"):
        assert category(call(server.url, token, "9plan_queue_pull", {"session_name": name})) is None
        assert category(call(server.url, token, last, dict(tool_calls(inside))[last])) is None, last
    created = call(server.url, token, "9plan_session_create", {})  # its one project: alpha
    assert category(created) is None and created["structuredContent"]["project"] == "alpha"
    actors = await in_thread(
        lambda: set(Event.objects.filter(session_id=name, kind="plan_note").values_list("actor", flat=True))
    )
    assert actors == {"agent:agent-of-alpha/agent-laptop"}


# --- REST -----------------------------------------------------------------------------------


def rest_urls(s: dict) -> dict[str, str]:
    name, plan = s["name"], s["done"]
    return {
        "session": f"/api/sessions/{name}/",
        "queue": f"/api/sessions/{name}/queue/",
        "plans": f"/api/sessions/{name}/plans/",
        "plan": f"/api/sessions/{name}/plans/{plan.id}/",
        "revisions": f"/api/sessions/{name}/plans/{plan.id}/revisions/",
        "revision": f"/api/sessions/{name}/plans/{plan.id}/revisions/1/",
        "validation": f"/api/sessions/{name}/validation/",
        "export": f"/api/sessions/{name}/export/",
        "history": f"/api/history/?q={SECRET}&session={name}",
        "events": f"/api/events/?session={name}",
        "plan events": f"/api/events/?plan={plan.id}",
    }


def rest_client(world, role) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {world['people'][role]['rest']}")
    return client


@pytest.mark.parametrize("role", ROLES)
def test_rest_inside_the_project_answers_every_member(world, role):
    client = rest_client(world, role)
    for what, url in rest_urls(world["inside"]).items():
        response = client.get(url)
        assert response.status_code == 200, (role, what, response.content)
    listed = client.get("/api/sessions/").json()
    assert [s["name"] for s in listed["results"]] == [world["inside"]["name"]]
    everywhere = client.get(f"/api/history/?q={SECRET}").json()["results"]
    assert {hit["session"] for hit in everywhere} == {world["inside"]["name"]}
    feed = client.get("/api/events/?page_size=100").json()["results"]
    assert feed and {e["session"] for e in feed} == {world["inside"]["name"]}


@pytest.mark.parametrize("role", ROLES)
def test_rest_outside_the_project_is_not_found_and_changes_nothing(world, role, sessions_dir):
    client, outside = rest_client(world, role), world["outside"]
    before = snapshot(sessions_dir)
    for what, url in rest_urls(outside).items():
        response = client.get(url)
        assert response.status_code == 404, (role, what, response.content)
        assert SECRET not in response.content.decode(), (role, what)
        gone = client.get(url.replace(outside["name"], "calm-blue-heron"))
        if outside["name"] in url and "plan=" not in url:
            assert response.json()["detail"] == gone.json()["detail"].replace("calm-blue-heron", outside["name"])
    plan = outside["review"]
    decided = client.post(
        f"/api/sessions/{outside['name']}/plans/{plan.id}/review/",
        {"decision": "approve"},
        format="json",
        HTTP_IF_MATCH='"whatever"',
    )
    assert decided.status_code in (403, 404), decided.content  # 403: no review role anywhere
    assert snapshot(sessions_dir) == before


@pytest.mark.parametrize("role", ROLES)
def test_a_rest_review_decision_needs_the_reviewer_role(world, role, sessions_dir):
    client, inside = rest_client(world, role), world["inside"]
    url = f"/api/sessions/{inside['name']}/plans/{inside['review'].id}/"
    etag = client.get(url)["ETag"]
    before = snapshot(sessions_dir)
    if role in ("reader", "agent"):
        refused = client.post(url + "review/", {"decision": "approve"}, format="json", HTTP_IF_MATCH=etag)
        assert refused.status_code == 403 and refused.json()["category"] == "PERMISSION_DENIED"
        assert "review" in refused.json()["detail"]
        assert snapshot(sessions_dir) == before
    else:
        approved = client.post(
            url + "review/", {"decision": "approve", "notes": "ok"}, format="json", HTTP_IF_MATCH=etag
        )
        assert approved.status_code == 200, approved.content
        assert Plan.objects.get(id=inside["review"].id).status == "completed"


@pytest.mark.parametrize("role", ROLES)
def test_rest_writes_inside_need_the_agent_or_manager_role(world, role, sessions_dir):
    client, inside = rest_client(world, role), world["inside"]
    name, queued = inside["name"], inside["queued"]
    url = f"/api/sessions/{name}/plans/{queued.id}/"
    etag = client.get(url)["ETag"]
    before = snapshot(sessions_dir)
    added = client.post(f"/api/sessions/{name}/plans/", plan_fields(goal="planted"), format="json")
    edited = client.patch(url, {"goal": "corrected"}, format="json", HTTP_IF_MATCH=etag)
    created = client.post("/api/sessions/", {"project": "alpha"}, format="json")
    if role in ("reader", "reviewer"):
        for refused in (added, edited, created):
            assert refused.status_code == 403 and refused.json()["category"] == "PERMISSION_DENIED"
            assert "'agent' or 'manager' role" in refused.json()["detail"]
        assert snapshot(sessions_dir) == before
    else:
        assert (added.status_code, edited.status_code, created.status_code) == (201, 200, 201)
        assert Plan.objects.get(id=queued.id).goal == "corrected"
        assert Event.objects.get(plan_id=added.json()["plans"][0]["id"]).actor == f"user:{role}-of-alpha"


@pytest.mark.parametrize("role", ROLES)
def test_rest_writes_outside_the_project_are_not_found_and_change_nothing(world, role, sessions_dir):
    client, outside = rest_client(world, role), world["outside"]
    before = snapshot(sessions_dir)
    added = client.post(f"/api/sessions/{outside['name']}/plans/", plan_fields(goal="planted"), format="json")
    edited = client.patch(
        f"/api/sessions/{outside['name']}/plans/{outside['queued'].id}/",
        {"goal": "corrected"},
        format="json",
        HTTP_IF_MATCH='"whatever"',
    )
    created = client.post("/api/sessions/", {"project": "beta"}, format="json")
    if role in ("reader", "reviewer"):
        assert {added.status_code, edited.status_code, created.status_code} == {403}  # no right to add anywhere
    else:
        assert (added.status_code, edited.status_code) == (404, 404), (added.content, edited.content)
        assert created.status_code in (400, 403) and "beta" not in created.json()["detail"].split("yours")[-1]
    for response in (added, edited, created):
        assert SECRET not in response.content.decode()
    assert snapshot(sessions_dir) == before


# --- admin ----------------------------------------------------------------------------------


def admin_pages(s: dict) -> dict[str, str]:
    event = Event.objects.filter(session_id=s["name"]).order_by("id").first()
    return {
        "session page": reverse("admin:sessions_app_session_change", args=[s["name"]]),
        "plan page": reverse("admin:sessions_app_plan_change", args=[s["done"].id]),
        "active plan page": reverse("admin:sessions_app_plan_change", args=[s["active"].id]),
        "event page": reverse("admin:sessions_app_event_change", args=[event.pk]),
        "revisions": reverse("admin:sessions_app_plan_change", args=[s["review"].id]),
        "project page": reverse("admin:sessions_app_project_change", args=[s["done"].session.project_id]),
    }


LISTS = (
    "sessions_app_session_changelist",
    "sessions_app_plan_changelist",
    "sessions_app_event_changelist",
    "sessions_app_project_changelist",
    "sessions_app_plan_review_inbox",
    "sessions_app_history_search",
)


def admin_actions(s: dict) -> list[tuple[str, str, dict, str]]:
    """(what, URL, form, the role that may) for every button of the admin."""
    act = lambda plan, action: reverse("admin:sessions_app_plan_act", args=[plan.id, action])  # noqa: E731
    project = s["done"].session.project_id
    return [
        ("move", act(s["queued"], "move"), {"position": "front"}, "manager"),
        ("requeue", act(s["active"], "requeue"), {"position": "front"}, "manager"),
        ("reclaim", act(s["active"], "reclaim"), {}, "manager"),
        ("discard", act(s["queued"], "discard"), {"reason": "x"}, "manager"),
        ("restore", reverse("admin:sessions_app_plan_restore", args=[s["queued"].id]), {"revision": "1"}, "manager"),
        ("release", reverse("admin:sessions_app_plan_release", args=[s["held"].id]), {}, "manager"),
        (
            "policy",
            reverse("admin:sessions_app_session_review_policy", args=[s["name"]]),
            {"review": "required"},
            "manager",
        ),
        (
            "decide",
            reverse("admin:sessions_app_plan_review", args=[s["review"].id]),
            {"decision": "approve"},
            "reviewer",
        ),
        (
            "grant",
            reverse("admin:sessions_app_project_grant", args=[project]),
            {"username": "x1", "role": "reader"},
            "manager",
        ),
        (
            "revoke",
            reverse("admin:sessions_app_project_revoke", args=[project]),
            {"username": "reader-of-alpha"},
            "manager",
        ),
    ]


def admin_client(world, role) -> Client:
    client = Client()
    client.force_login(world["people"][role]["user"])
    return client


@pytest.mark.parametrize("role", ROLES)
def test_admin_pages_show_a_member_its_project_only(world, role):
    client, inside, outside = admin_client(world, role), world["inside"], world["outside"]
    for what, url in admin_pages(inside).items():
        assert client.get(url).status_code == 200, (role, what)
    for what, url in admin_pages(outside).items():
        assert client.get(url).status_code == 404, (role, what)
    for name in LISTS:
        page = client.get(reverse(f"admin:{name}") + ("?q=" + SECRET if "search" in name else ""))
        assert page.status_code == 200, (role, name)
        text = page.content.decode()
        assert outside["name"] not in text and "beta" not in text, (role, name)
    home = client.get(reverse("admin:index")).content.decode()
    assert outside["name"] not in home


@pytest.mark.parametrize("role", ROLES)
def test_admin_buttons_need_their_role_and_outside_are_not_found(world, role, sessions_dir):
    client, inside, outside = admin_client(world, role), world["inside"], world["outside"]
    before = snapshot(sessions_dir)
    for what, url, form, needs in admin_actions(outside):
        response = client.post(url, form)
        # A role that may press this button somewhere is told the plan is not there; one
        # that may press it nowhere is refused before anything is looked up.
        may_somewhere = role == needs or (role == "manager" and needs == "reviewer")
        assert response.status_code == (404 if may_somewhere else 403), (role, what, response.status_code)
    for what, url, form, needs in admin_actions(inside):
        allowed = role == needs or (role == "manager" and needs == "reviewer")
        if allowed:
            continue
        response = client.post(url, form)
        assert response.status_code == 403, (role, what, response.status_code)
    assert snapshot(sessions_dir) == before


def test_admin_buttons_work_for_the_role_that_may(world):
    inside = world["inside"]
    for role in ("manager", "reviewer"):
        client = admin_client(world, role)
        for what, url, form, needs in admin_actions(inside):
            if needs != role or what in ("reclaim", "revoke"):
                continue  # requeue took the active plan already; revoking is tried on its own
            response = client.post(url, form)
            assert response.status_code == 302, (role, what, response.status_code)
            flashed = [str(m) for m in get_messages(response.wsgi_request)]
            assert flashed and not any(": PERMISSION_DENIED" in m or "_NOT_FOUND" in m for m in flashed), (
                what,
                flashed,
            )
    assert Plan.objects.get(id=inside["review"].id).status == "completed"
    assert Membership.objects.filter(project_id="alpha", user__username="x1", role="reader").exists()


# --- who a worker is, and losing access -----------------------------------------------------


@pytest.mark.anyio
async def test_two_tokens_without_a_worker_name_hold_two_plans(world, start_server):
    server = start_server()
    inside = world["inside"]
    name = inside["name"]
    alice = world["people"]["agent"]["mcp"]
    bob = await in_thread(auth.token_create, name="bob-laptop", user="agent-of-alpha")
    await in_thread(services.plan_enqueue, session_name=name, **plan_fields(goal="second queued"))
    first = call(server.url, alice, "9plan_queue_pull", {"session_name": name})["structuredContent"]["plan_id"]
    second = call(server.url, bob, "9plan_queue_pull", {"session_name": name})["structuredContent"]["plan_id"]
    assert first != second
    assert category(call(server.url, alice, "9plan_plan_note", {"text": "alice's", "session_name": name})) is None
    assert category(call(server.url, bob, "9plan_plan_note", {"text": "bob's", "session_name": name})) is None
    notes = await in_thread(lambda: dict(Plan.objects.filter(id__in=[first, second]).values_list("id", "notes")))
    assert "alice's" in notes[first] and "bob's" not in notes[first]
    assert "bob's" in notes[second] and "alice's" not in notes[second]


@pytest.mark.anyio
async def test_a_member_removed_loses_access_on_the_next_request(world, start_server):
    server = start_server()
    token, name = world["people"]["agent"]["mcp"], world["inside"]["name"]
    rest = rest_client(world, "agent")
    assert category(call(server.url, token, "9plan_session_resume", {"session_name": name})) is None
    assert (await in_thread(rest.get, f"/api/sessions/{name}/")).status_code == 200
    await in_thread(lambda: call_command("project", "revoke", "alpha", "agent-of-alpha", stderr=io.StringIO()))
    assert category(call(server.url, token, "9plan_session_resume", {"session_name": name})) == "SESSION_NOT_FOUND"
    assert (await in_thread(rest.get, f"/api/sessions/{name}/")).status_code == 403  # a member of nothing now
    client = await in_thread(admin_client, world, "agent")
    assert (await in_thread(client.get, reverse("admin:sessions_app_session_change", args=[name]))).status_code in (
        403,
        404,
    )


@pytest.mark.anyio
async def test_a_removed_member_replaying_a_request_id_is_refused_without_the_plan(world, start_server):
    server = start_server()
    token, name = world["people"]["agent"]["mcp"], world["inside"]["name"]
    asked = {"session_name": name, "worker": "w9", "request_id": "pull-1"}
    first = call(server.url, token, "9plan_queue_pull", asked)
    assert category(first) is None and SECRET in json.dumps(first)
    assert call(server.url, token, "9plan_queue_pull", asked) == first  # a retry while a member
    await in_thread(lambda: call_command("nineplan_project", "revoke", "alpha", "agent-of-alpha", stderr=io.StringIO()))

    replayed = call(server.url, token, "9plan_queue_pull", asked)

    assert category(replayed) == "SESSION_NOT_FOUND"
    assert SECRET not in json.dumps(replayed) and first["structuredContent"]["plan_id"] not in json.dumps(replayed)
