"""Fuzzing every tool's arguments through the SDK's in-memory client.

Arguments are drawn from each tool's own input schema (tools/list), mixed with hand-picked
nasties: wrong types, missing and unknown arguments, huge strings, NUL bytes, lone
surrogates, right-to-left and combining marks, path traversal, FTS query syntax and
wrong-case enumerations. Whatever arrives, the answer is a success or an error in the
layout of docs/design.md, "Errors", with a category (a VALIDATION_ERROR names its field),
never a traceback or a protocol error, and a rejected call changes no row, no event and
no file.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from mcp import Client

from mcp_bridge.server import build_server
from mcp_bridge.tools import TOOLS
from sessions_app import services
from sessions_app.errors import CATEGORIES
from sessions_app.models import Plan
from tests.conftest import plan_fields
from tests.mcp_bridge.helpers import ERROR_LAYOUT, snapshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOOL_NAMES = [name for name, _, _ in TOOLS]
# Tools whose answer carries a plan's own text; every other answer stays small
# (docs/design.md, "The edges").
PLAN_TEXT_TOOLS = {"9plan_queue_pull", "9plan_history_get"}
MAX_ANSWER_BYTES = 2048

NASTY_STRINGS = [
    "",
    " ",
    "\u3000\u00a0\u2028",
    "\n\n\r\n",
    "\x00",
    "nul\x00inside",
    "\ud800",
    "lone \udfff surrogate",
    "\u202eRTL override\u202c",
    "\u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd",
    "e\u0301\u0301\u0301\u0301 combining",
    "\u200b\u200d\ufeff",
    "🎉" * 50,
    "../../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "/etc/passwd",
    "brave-amber-otter/../../x",
    "brave-amber-otter\x00",
    "Brave-Amber-Otter",
    "brave-amber-otter ",
    "k3x9",
    "k3x9q1",
    "K3X9Q",
    "../k3",
    '"foo',
    "foo AND",
    "NEAR(a b",
    "*",
    "-x",
    "col:val",
    "(",
    "it's",
    "c++",
    "'; DROP TABLE sessions_app_plan; --",
    "%s %d {0} ${x}",
    "# Goal\n# Notes",
    "Front",
    "BACK",
    " back",
    "Append",
    "REPLACE",
    "x" * 70_000,  # over the default field limit
    "word " * 300,  # over the default query limit
]
UNKNOWN_KEYS = ["bogus", "sessionName", "Session_Name", "../x", "goal ", "__proto__"]
WRONG_TYPES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def fetch_tools() -> dict[str, dict[str, Any]]:
    async def listed():
        return {t.name: t.input_schema for t in await build_server().list_tools()}

    return anyio.run(listed)


class Pools:
    """Values that mean something to the server right now: real session names and plan ids."""

    def __init__(self, current: str, other: str, plan_ids: list[str], *, clean: bool):
        self.current = current
        self.other = other
        self.plan_ids = plan_ids
        # Clean draws keep to the schema with sensible values, so calls get past validation
        # and reach the services too; the others mix in every nasty.
        self.clean = clean


def string_strategy(name: str, schema: dict[str, Any], pools: Pools) -> st.SearchStrategy:
    if pools.clean:
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        if name == "session_name":
            return st.sampled_from([pools.current, pools.other])
        if name == "plan_id":
            return st.sampled_from(pools.plan_ids)
        return st.text(st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=30)
    nasty = st.sampled_from(NASTY_STRINGS)
    if "enum" in schema:
        return st.one_of(st.sampled_from(schema["enum"]), nasty)
    if name == "session_name":
        return st.one_of(st.sampled_from([pools.current, pools.other, "calm-blue-heron"]), nasty)
    if name == "plan_id":
        return st.one_of(st.sampled_from(pools.plan_ids or ["zz9zz"]), st.just("zz9zz"), nasty)
    plain = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=40)
    return st.one_of(plain, plain, nasty, st.text(max_size=20))


def from_schema(name: str, schema: dict[str, Any], defs: dict[str, Any], pools: Pools) -> st.SearchStrategy:
    if "$ref" in schema:
        return from_schema(name, defs[schema["$ref"].rsplit("/", 1)[-1]], defs, pools)
    if "anyOf" in schema:
        # An enumeration is advertised beside the anyOf ("front" | "back" | null).
        shared = {"enum": schema["enum"]} if "enum" in schema else {}
        return st.one_of([from_schema(name, {**option, **shared}, defs, pools) for option in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "null":
        return st.none()
    if kind == "string":
        return string_strategy(name, schema, pools)
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        if pools.clean:
            return st.integers(min_value=1, max_value=8)
        return st.one_of(st.integers(min_value=-3, max_value=12), st.integers())
    if kind == "array":
        items = from_schema(name, schema["items"], defs, pools)
        return st.lists(items, min_size=1, max_size=3) if pools.clean else st.lists(items, max_size=4)
    if kind == "object":
        return object_strategy(schema, defs, pools)
    raise AssertionError(f"the fuzzer does not know the schema {schema}")


def object_strategy(schema: dict[str, Any], defs: dict[str, Any], pools: Pools) -> st.SearchStrategy:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))

    @st.composite
    def build(draw):
        value: dict[str, Any] = {}
        for key, sub in props.items():
            if pools.clean:
                if key in required or draw(st.booleans()):
                    value[key] = draw(from_schema(key, sub, defs, pools))
                continue
            # Required arguments are sometimes missing, optional ones often left out, and
            # any value may come with the wrong type.
            if draw(st.integers(0, 9)) < (9 if key in required else 5):
                wrong = draw(st.integers(0, 7)) == 0
                value[key] = draw(WRONG_TYPES if wrong else from_schema(key, sub, defs, pools))
        if not pools.clean and draw(st.integers(0, 9)) == 0:
            value[draw(st.sampled_from(UNKNOWN_KEYS))] = draw(st.one_of(st.text(max_size=5), st.integers()))
        return value

    return build()


# --- the harness --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    return fetch_tools()


@pytest.fixture
def connected(transactional_db, sessions_dir):
    """A blocking handle on one in-memory client, so Hypothesis can drive it from sync code."""
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(build_server())) as client:
            yield portal, client


@pytest.fixture
def world(connected):
    """Two sessions (the connection's current one and another) and plans in every state."""
    portal, client = connected
    created = portal.call(client.call_tool, "9plan_session_create", {"task_description": "fuzzing"})
    current = created.structured_content["session_name"]
    other = services.session_create(task_description="another agent's")
    for session_name in (current, other.name):
        services.plan_enqueue_many(session_name=session_name, plans=[plan_fields(goal=f"g{i}") for i in range(3)])
        services.plan_pull(session_name=session_name)
        services.plan_complete(session_name=session_name, outcome="done")
    return current, other.name


def ensure_active(session_name: str) -> None:
    """Give the fuzzed calls on the active plan something to act on, most of the time."""
    if Plan.objects.filter(session_id=session_name, status="active").exists():
        return
    if not Plan.objects.filter(session_id=session_name, status="queued").exists():
        services.plan_enqueue(session_name=session_name, **plan_fields(goal="refill"))
    services.plan_pull(session_name=session_name)


def check_answer(tool: str, arguments: dict[str, Any], result, before: dict[str, Any], after: dict[str, Any]) -> None:
    text = result.content[0].text
    shown = json.dumps(arguments, default=str)[:300]
    assert len(result.content) == 1 and result.content[0].type == "text", shown
    assert text.startswith("[Session: "), (shown, text[:300])
    assert "Traceback" not in text and "Error executing tool" not in text, (shown, text[:500])
    if tool not in PLAN_TEXT_TOOLS:
        assert len(text.encode("utf-8")) <= MAX_ANSWER_BYTES, (shown, len(text.encode("utf-8")), text[:300])
    if not result.is_error:
        return
    match = ERROR_LAYOUT.match(text)
    assert match, (shown, text[:500])
    category = match["category"]
    assert category in CATEGORIES, (shown, text[:500])
    # DATABASE_ERROR is what an unexpected exception becomes: for bad input, it is a bug.
    assert category != "DATABASE_ERROR", (shown, text[:500])
    data = result.structured_content
    assert data["error"] == category and data["message"] == match["message"]
    if category == "VALIDATION_ERROR":
        fields = data.get("field")
        assert fields, (shown, text[:500])
        for field in [fields] if isinstance(fields, str) else fields:
            assert field in match["message"], (shown, field, text[:500])
    assert after == before, (shown, text[:500])


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_fuzzed_arguments_get_a_categorised_answer_and_rejections_change_nothing(
    tool, schemas, connected, world, sessions_dir
):
    portal, client = connected
    current, other = world
    schema = schemas[tool]

    @given(data=st.data())
    @hsettings(
        max_examples=50,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    def fuzz(data):
        if data.draw(st.booleans(), label="ensure active"):
            ensure_active(current)
        plan_ids = list(Plan.objects.filter(session_id__in=[current, other]).values_list("id", flat=True))
        pools = Pools(current, other, sorted(plan_ids), clean=data.draw(st.integers(0, 3), label="clean") == 0)
        arguments = data.draw(object_strategy(schema, schema.get("$defs", {}), pools), label="arguments")
        before = snapshot(sessions_dir)
        result = portal.call(client.call_tool, tool, arguments)
        check_answer(tool, arguments, result, before, snapshot(sessions_dir))

    fuzz()


def test_the_fuzzer_covers_every_tool(schemas):
    assert sorted(schemas) == sorted(TOOL_NAMES)
