"""What every tool promises: names, annotations, descriptions, argument errors in the error
layout (docs/design.md, "Errors"), the optional session_name, and compact answers whatever
the size of the data."""

from __future__ import annotations

import json
import threading

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult

from mcp_bridge.server import build_server
from mcp_bridge.tools import CORE
from mcp_bridge.tools.arguments import SHARED
from sessions_app import services
from sessions_app.models import Session
from tests.conftest import plan_fields
from tests.mcp_bridge.helpers import error, in_thread, ok, plan_args, snapshot, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

READ_ONLY = {
    "9plan_session_resume",
    "9plan_plan_read",
    "9plan_history_search",
    "9plan_history_get",
    "9plan_admin_validate",
    "9plan_admin_sessions",
    "9plan_admin_state",
}
WRITING = {
    "9plan_session_create",
    "9plan_queue_add",
    "9plan_queue_add_batch",
    "9plan_queue_pull",
    "9plan_plan_defer",
    "9plan_plan_complete",
    "9plan_plan_discard",
    "9plan_plan_note",
    "9plan_plan_renew",
}
# Valid arguments for each tool, for calls that should get past argument checking.
VALID_ARGS = {
    "9plan_queue_add": plan_args(),
    "9plan_queue_add_batch": {"plans": [plan_args()]},
    "9plan_queue_pull": {},
    "9plan_plan_defer": {"reason": "later"},
    "9plan_plan_complete": {"outcome": "done"},
    "9plan_plan_discard": {"reason": "obsolete"},
    "9plan_plan_note": {"text": "a finding"},
    "9plan_plan_renew": {},
    "9plan_history_search": {"query": "invoice"},
    "9plan_history_get": {"plan_id": "abcde"},
    "9plan_plan_read": {"plan_id": "abcde"},
    "9plan_admin_validate": {},
    "9plan_admin_sessions": {},
    "9plan_admin_state": {},
}
REQUIRED = {
    "9plan_session_resume": ["session_name"],
    "9plan_queue_add": ["approach", "context", "goal", "success_criteria"],
    "9plan_queue_add_batch": ["plans"],
    "9plan_plan_defer": ["reason"],
    "9plan_plan_complete": ["outcome"],
    "9plan_plan_discard": ["reason"],
    "9plan_plan_note": ["text"],
    "9plan_history_search": ["query"],
    "9plan_history_get": ["plan_id"],
}
ENUMS = [
    ("9plan_queue_add", plan_args(), "position", ("front", "back")),
    ("9plan_queue_add_batch", {"plans": [plan_args()]}, "position", ("front", "back")),
    ("9plan_plan_defer", {"reason": "r"}, "position", ("front", "back")),
    ("9plan_plan_note", {"text": "t"}, "mode", ("append", "replace")),
    ("9plan_history_search", {"query": "invoice"}, "scope", ("session", "project")),
]


@pytest.fixture
async def current(client):
    """A current session with one active plan and two queued behind it."""
    r = await client.call_tool("9plan_session_create", {"task_description": "Port billing"})
    name = r.structured_content["session_name"]
    for goal in ["A", "B", "C"]:
        await client.call_tool("9plan_queue_add", plan_args(goal=goal))
    await client.call_tool("9plan_queue_pull", {})
    return name


# --- the tool list -----------------------------------------------------------------------


async def test_the_tools_are_exactly_the_documented_ones(client):
    names = {t.name for t in (await client.list_tools()).tools}
    assert names == READ_ONLY | WRITING


async def test_read_only_hint_is_true_exactly_on_the_read_only_tools(client):
    # A hint that is not sent has the protocol's default: not read-only, destructive,
    # not idempotent, open world.
    for tool in (await client.list_tools()).tools:
        hints = tool.annotations
        assert hints is not None and hints.open_world_hint is False, tool.name
        assert bool(hints.read_only_hint) is (tool.name in READ_ONLY), tool.name
        if tool.name not in READ_ONLY:
            assert hints.destructive_hint is (tool.name == "9plan_plan_discard"), tool.name


async def test_every_tool_and_argument_is_described_for_the_model(client):
    # The arguments nearly every tool takes are described once, in the instructions.
    for shared in SHARED:
        assert f"{shared} (" in " ".join(client.instructions.split()), shared
    for tool in (await client.list_tools()).tools:
        assert tool.title, tool.name
        assert "Example:" in tool.description, tool.name
        example = tool.description.split("Example:", 1)[1].strip()
        assert example.startswith("{"), tool.name
        schema = tool.input_schema
        assert schema.get("additionalProperties") is False, tool.name
        for arg, spec in schema.get("properties", {}).items():
            described = spec.get("description") or spec.get("items", {}).get("description")
            if arg in SHARED and arg not in schema.get("required", []):
                assert not described, f"{tool.name}.{arg} is described in the instructions, not again here"
            else:
                assert described, f"{tool.name}.{arg}"
        assert sorted(schema.get("required", [])) == REQUIRED.get(tool.name, []), tool.name


async def test_enumerated_arguments_advertise_their_values(client):
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, _, arg, values in ENUMS:
        spec = tools[name].input_schema["properties"][arg]
        assert spec["enum"] == list(values), name
        for value in values:
            assert f"'{value}'" in spec["description"], name


# Tools that act on no one session: creating one, and listing them all.
NO_SESSION_NAME = {"9plan_session_create", "9plan_admin_sessions"}
NAMES_A_SESSION = [t for t in VALID_ARGS if t not in NO_SESSION_NAME]


async def test_every_tool_but_create_and_the_list_takes_an_optional_session_name(client):
    for tool in (await client.list_tools()).tools:
        props = tool.input_schema.get("properties", {})
        if tool.name in NO_SESSION_NAME:
            assert "session_name" not in props
        else:
            assert "session_name" in props, tool.name


async def test_descriptions_carry_no_source_indentation(client):
    described = [(t.name, t.description) for t in (await client.list_tools()).tools]
    described += [(p.name, p.description) for p in (await client.list_prompts()).prompts]
    for name, text in described:
        assert text and text == text.strip(), name
        assert "\n " not in text, (name, text)


def listed_bytes(listing) -> int:
    """tools/list's result as the server sends it (compact JSON, unset fields left out)."""
    return len(listing.model_dump_json(by_alias=True, exclude_none=True).encode())


async def test_tools_list_fits_in_12_kb(client):
    # Sent with every model turn: 12 KB for every tool, 7 KB for the core set.
    assert listed_bytes(await client.list_tools()) <= 12 * 1024


async def test_the_core_set_lists_ten_tools_within_7_kb_and_says_what_it_leaves_out(settings, sessions_dir):
    settings.NINEPLAN_TOOLS = "core"
    async with Client(build_server()) as core:
        listing = await core.list_tools()
        assert {t.name for t in listing.tools} == CORE
        assert listed_bytes(listing) <= 7 * 1024
        assert "CORE SET" in core.instructions and "9plan_plan_discard" in core.instructions
        # A tool left out is refused like any unknown name, with nothing changed.
        refused = await core.call_tool("9plan_admin_sessions", {})
        assert refused.is_error and "no tool named" in text_of(refused)
    settings.NINEPLAN_TOOLS = "all"
    async with Client(build_server()) as every:
        assert len((await every.list_tools()).tools) == 16
        assert "CORE SET" not in every.instructions


# --- argument errors -----------------------------------------------------------------------


# One test per rule, looping over the tools: a test each would mostly time database set-up.


async def test_missing_required_arguments_name_the_field(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    for tool, fields in REQUIRED.items():
        expected_field = fields[0] if len(fields) == 1 else fields
        data = error(await client.call_tool(tool, {}), "VALIDATION_ERROR", current, field=expected_field)
        for field in fields:
            assert f"{field}: field required" in data["message"], tool
    assert await in_thread(snapshot, sessions_dir) == before


async def test_a_session_name_of_the_wrong_type_is_named_on_every_tool(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    for tool in [*NAMES_A_SESSION, "9plan_session_resume"]:
        args = {**VALID_ARGS.get(tool, {}), "session_name": 42}
        data = error(await client.call_tool(tool, args), "VALIDATION_ERROR", current, field="session_name")
        assert "session_name: input should be a valid string" in data["message"], tool
    assert await in_thread(snapshot, sessions_dir) == before


async def test_wrong_types_of_other_arguments_name_the_field(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    for tool, args, field in [
        ("9plan_session_create", {"task_description": ["a"]}, "task_description"),
        ("9plan_queue_add", plan_args(goal={"text": "g"}), "goal"),
        ("9plan_queue_add_batch", {"plans": "not plans"}, "plans"),
        ("9plan_queue_add_batch", {"plans": [plan_args(goal=7)]}, "plans[0].goal"),
        ("9plan_plan_defer", {"reason": True}, "reason"),
        ("9plan_plan_note", {"text": 3.5}, "text"),
        ("9plan_history_search", {"query": "x", "max_results": "lots"}, "max_results"),
        ("9plan_history_get", {"plan_id": 12345}, "plan_id"),
        ("9plan_plan_read", {"plan_id": 12345}, "plan_id"),
        ("9plan_queue_add", {**plan_args(), "request_id": 12345}, "request_id"),
    ]:
        data = error(await client.call_tool(tool, args), "VALIDATION_ERROR", current, field=field)
        assert data["message"].startswith(f"Invalid arguments: {field}: "), tool
    assert await in_thread(snapshot, sessions_dir) == before


async def test_many_wrong_arguments_name_only_the_fields_the_message_explains(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    # Three plans of four wrong sections each: twelve problems, more than a message shows.
    bad = {"plans": [{"context": None, "goal": None, "approach": None, "success_criteria": None}] * 3}
    result = await client.call_tool("9plan_queue_add_batch", bad)
    data = result.structured_content
    assert data["error"] == "VALIDATION_ERROR"
    assert "(2 more problems not shown)" in data["message"]
    assert len(data["field"]) == 10 and "plans[2].approach" not in data["field"]
    for field in data["field"]:
        assert f"{field}: " in data["message"], field
    assert await in_thread(snapshot, sessions_dir) == before


async def test_unknown_arguments_are_refused_not_ignored(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    for tool in sorted(READ_ONLY | WRITING):
        args = {**VALID_ARGS.get(tool, {}), "postion": "front"}
        if tool == "9plan_session_resume":
            args["session_name"] = current
        data = error(await client.call_tool(tool, args), "VALIDATION_ERROR", current, field="postion")
        assert "'postion'" in data["message"] and tool in data["message"], tool
    assert await in_thread(snapshot, sessions_dir) == before


async def test_unknown_keys_inside_a_batch_plan_are_refused(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    r = await client.call_tool("9plan_queue_add_batch", {"plans": [{**plan_args(), "priority": 1}]})
    error(r, "VALIDATION_ERROR", current, field="plans[0].priority")
    assert await in_thread(snapshot, sessions_dir) == before


async def test_unknown_tool(client, current):
    data = error(await client.call_tool("9plan_queue_peek", {}), "VALIDATION_ERROR", current, field="name")
    assert "9plan_queue_peek" in data["message"]


async def test_wrong_case_enums_are_rejected_naming_both_values(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    for tool, args, arg, values in ENUMS:
        for wrong in [values[0].capitalize(), values[1].upper(), f" {values[0]}", "middle"]:
            data = error(await client.call_tool(tool, {**args, arg: wrong}), "VALIDATION_ERROR", current, field=arg)
            assert f"'{values[0]}'" in data["message"] and f"'{values[1]}'" in data["message"], tool
            assert repr(wrong) in data["message"], tool
    assert await in_thread(snapshot, sessions_dir) == before


async def test_an_argument_error_names_the_session_it_was_meant_for(client, current, other_session):
    r = await client.call_tool("9plan_plan_note", {"session_name": other_session.name})
    error(r, "VALIDATION_ERROR", other_session.name, field="text")


# --- session_name on every tool -------------------------------------------------------------


async def test_an_unknown_session_name_is_reported_on_every_tool(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    for tool in [*NAMES_A_SESSION, "9plan_session_resume"]:
        args = {**VALID_ARGS.get(tool, {}), "session_name": "ghost-grey-owl"}
        data = error(await client.call_tool(tool, args), "SESSION_NOT_FOUND", "ghost-grey-owl")
        assert "ghost-grey-owl" in data["message"], tool
    assert await in_thread(snapshot, sessions_dir) == before
    ok(await client.call_tool("9plan_admin_state", {}), current)


async def test_every_tool_acts_on_the_named_session_and_keeps_the_current_one(client, current, other_session):
    theirs = other_session.name
    await in_thread(services.plan_enqueue, session_name=theirs, **plan_fields(goal="Invoice export"))
    calls = [
        ("9plan_queue_add", plan_args(goal="Second")),
        ("9plan_queue_add_batch", {"plans": [plan_args(goal="Third")], "position": "back"}),
        ("9plan_queue_pull", {}),
        ("9plan_plan_note", {"text": "note"}),
        ("9plan_plan_renew", {}),
        ("9plan_plan_defer", {"reason": "later", "position": "back"}),
        ("9plan_queue_pull", {}),
        ("9plan_plan_complete", {"outcome": "invoice export done"}),
        ("9plan_queue_pull", {}),
        ("9plan_plan_discard", {"reason": "not needed"}),
        ("9plan_history_search", {"query": "invoice export"}),
        ("9plan_admin_validate", {}),
        ("9plan_admin_state", {}),
    ]
    done = None
    for tool, args in calls:
        data = ok(await client.call_tool(tool, {**args, "session_name": theirs}), theirs)
        if tool == "9plan_plan_complete":
            done = data["plan_id"]
        if tool == "9plan_history_search":
            assert [hit["id"] for hit in data["results"]] == [done]
    ok(await client.call_tool("9plan_history_get", {"plan_id": done, "session_name": theirs}), theirs)
    state = ok(await client.call_tool("9plan_admin_state", {}), current)
    assert state["active_plan"]["goal"] == "A" and state["completed_count"] == 0 and state["queue_length"] == 2


# --- compact answers ---------------------------------------------------------------------------

# Multi-byte and control characters cost more than one byte each in the JSON answer.
LONG = "Migrate the legacy invoicing module 🧾 to the new ledger — 監査ログ付き\x07 with full audit trail " * 20


def big_world() -> str:
    """30 sessions; one holds 300 queued and 300 completed plans with long texts."""
    for i in range(29):
        services.session_create(task_description=f"Session {i}: " + LONG)
    session = services.session_create(task_description=LONG)
    name = session.name
    long_plan = plan_fields(goal=LONG, context=LONG, inputs=LONG, outputs=LONG, approach=LONG, success_criteria=LONG)
    for _ in range(6):
        services.plan_enqueue_many(session_name=name, plans=[long_plan] * 50, position="front")
    for _ in range(300):
        services.plan_pull(session_name=name)
        services.plan_complete(session_name=name, outcome="Invoice ledger migration outcome " + LONG)
    for _ in range(6):
        services.plan_enqueue_many(session_name=name, plans=[long_plan] * 50)
    return name


@pytest.mark.slow
async def test_every_answer_stays_under_2_kb_in_a_big_session(client, transactional_db, sessions_dir):
    name = await in_thread(big_world)
    limit = 2048
    sizes: dict[str, int] = {}

    async def call(tool, args, *, capped=True, **expect):
        result = await client.call_tool(tool, args)
        text = text_of(result)
        size = len(text.encode())
        sizes[tool] = max(size, sizes.get(tool, 0))
        assert not result.is_error or expect.get("is_error"), text
        if capped:
            assert size <= limit, (tool, size)
        return result

    await call("9plan_session_resume", {"session_name": name})
    await call("9plan_admin_sessions", {})
    await call("9plan_admin_state", {})
    await call("9plan_admin_validate", {})
    for query in ["invoice ledger migration", "legacy", "audit trail outcome"]:
        await call("9plan_history_search", {"query": query, "max_results": 8})
    done = (await call("9plan_history_search", {"query": "legacy"})).structured_content["results"][0]["id"]
    await call("9plan_history_get", {"plan_id": done}, capped=False)
    await call("9plan_queue_add", plan_args(goal=LONG))
    await call("9plan_queue_add_batch", {"plans": [plan_args(goal=LONG)] * 50, "position": "front"})
    await call("9plan_queue_pull", {}, capped=False)
    await call("9plan_plan_note", {"text": LONG * 5})
    await call("9plan_plan_read", {}, capped=False)
    await call("9plan_plan_renew", {})
    await call("9plan_admin_state", {})
    await call("9plan_session_resume", {"session_name": name})
    await call("9plan_plan_defer", {"reason": LONG})
    await call("9plan_queue_pull", {}, capped=False)
    await call("9plan_plan_complete", {"outcome": LONG})
    await call("9plan_queue_pull", {}, capped=False)
    await call("9plan_plan_discard", {"reason": LONG})
    await call("9plan_session_create", {"task_description": LONG})
    assert set(sizes) == READ_ONLY | WRITING

    # A session whose files all vanished has hundreds of issues: still a capped answer.
    for path in (sessions_dir / name / "plans").glob("*.txt"):
        path.unlink()
    data = (await call("9plan_admin_validate", {"session_name": name})).structured_content
    assert data["valid"] is False and data["issues_more"] > 0
    await call("9plan_admin_state", {"session_name": name})


async def test_errors_stay_small_whatever_the_caller_sends(client, current, sessions_dir):
    huge = "Front" * 5000
    results = [
        await client.call_tool("9plan_queue_add", plan_args(position=huge)),
        await client.call_tool("9plan_plan_note", {"text": "x", "mode": huge}),
        await client.call_tool("9plan_session_resume", {"session_name": huge}),
        await client.call_tool("9plan_history_get", {"plan_id": huge}),
        await client.call_tool("9plan_queue_add", {**plan_args(), huge: 1}),
        await client.call_tool("9plan_queue_add_batch", {"plans": [{**plan_args(), huge: 1}]}),
        await client.call_tool(huge, {}),
        await client.call_tool("9plan_queue_add", plan_args(goal="g" * 100_000)),
        await client.call_tool("9plan_history_search", {"query": "q" * 100_000}),
    ]
    for result in results:
        assert result.is_error
        assert len(text_of(result).encode()) <= 1024, text_of(result)[:200]
        assert len(json.dumps(result.structured_content, ensure_ascii=False).encode()) <= 1024


# --- start-up and failures outside the tools' error mapper ----------------------------------


async def test_a_first_call_waits_for_start_up_while_the_loop_goes_on(client, fresh):
    release = threading.Event()
    fresh.start(lambda: release.wait(10), setup=lambda: None)
    fresh.wait_apps(timeout=10)
    answers = []

    async def create() -> None:
        answers.append(await client.call_tool("9plan_session_create", {"task_description": "early"}))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(create)
            await anyio.sleep(0.1)
            await client.list_tools()  # answered while the call waits for the database
            assert answers == [] and not fresh.ready()
            release.set()
    name = answers[0].structured_content["session_name"]
    ok(answers[0], name)
    assert await in_thread(lambda: Session.objects.get(name=name).task_description) == "early"


async def test_a_tool_failing_outside_its_error_mapper_is_answered_in_the_error_layout(transactional_db, sessions_dir):
    server = build_server()

    def broken(ctx: Context) -> CallToolResult:
        """Fails before its body reaches the error mapper."""
        raise RuntimeError("a bug")

    server.add_tool(broken, name="9plan_broken")
    async with Client(server) as connected:
        data = error(await connected.call_tool("9plan_broken", {}), "DATABASE_ERROR", None)
        assert "a bug" not in data["message"]
        ok(await connected.call_tool("9plan_admin_sessions", {}), None)  # the server serves on


def integer_arguments(tool) -> list[str]:
    """The arguments whose schema says integer (alone or beside null)."""
    found = []
    for name, schema in tool.input_schema.get("properties", {}).items():
        kinds = [schema, *schema.get("anyOf", [])]
        if any(kind.get("type") == "integer" for kind in kinds):
            found.append(name)
    return found


async def test_every_integer_argument_refuses_a_flag_or_a_number_in_text(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    checked = []
    for tool in (await client.list_tools()).tools:
        valid = {**VALID_ARGS.get(tool.name, {})} if tool.name != "9plan_session_create" else {}
        for field in integer_arguments(tool):
            for wrong in (True, "1800"):
                result = await client.call_tool(tool.name, {**valid, field: wrong})
                data = error(result, "VALIDATION_ERROR", current, field=field)
                assert data["message"].startswith(f"Invalid arguments: {field}: input should be a valid integer")
            checked.append((tool.name, field))
    assert {("9plan_session_create", "lease_seconds"), ("9plan_session_create", "max_attempts")} <= set(checked)
    assert ("9plan_history_search", "max_results") in checked
    assert await in_thread(snapshot, sessions_dir) == before


async def test_a_batch_dependency_index_is_a_whole_number_not_a_flag(client, current, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    plans = [plan_args(goal="A"), plan_args(goal="B", depends_on=[True])]
    data = error(await client.call_tool("9plan_queue_add_batch", {"plans": plans}), "VALIDATION_ERROR", current)
    assert "plans[1].depends_on[0]" in data["message"]
    assert await in_thread(snapshot, sessions_dir) == before
