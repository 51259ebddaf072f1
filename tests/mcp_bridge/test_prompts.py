"""The server instructions and the bootstrap prompt (mcp_bridge/prompts.py): rendered
directly, and listed and fetched through the SDK's in-memory client."""

from __future__ import annotations

import pytest

from mcp_bridge import prompts

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


def test_bootstrap_names_the_task_trimmed_and_leaves_no_placeholder():
    text = prompts.bootstrap("  Port the billing service \n")
    assert text.splitlines()[0] == "You are setting up a 9plan session for a complex task: Port the billing service."
    assert text == prompts.BOOTSTRAP.format(task_clause=": Port the billing service")
    for blank in (None, "", " \t\n"):
        assert prompts.bootstrap(blank) == prompts.BOOTSTRAP.format(task_clause="")
    assert "{" not in prompts.bootstrap("a task with {braces}").replace("{braces}", "")


async def test_instructions_describe_the_loop_and_recovery(client):
    text = client.instructions
    for needle in [
        "9plan_session_create",
        "9plan_session_resume",
        "9plan_queue_add_batch",
        "9plan_queue_pull",
        "9plan_plan_complete",
        "9plan_plan_defer",
        "9plan_plan_note",
        "9plan_history_search",
        "QUEUE_EMPTY",
        "[Session: name]",
        "'front'",
        "# Notes",
    ]:
        assert needle in text, needle


async def test_bootstrap_prompt_is_listed_with_an_optional_task(client):
    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == ["bootstrap"]
    (argument,) = prompts[0].arguments
    assert argument.name == "task" and not argument.required
    assert prompts[0].description


async def test_bootstrap_prompt_with_a_task(client):
    result = await client.get_prompt("bootstrap", {"task": "Port the billing service"})
    (message,) = result.messages
    assert message.role == "user"
    text = message.content.text
    assert text.startswith("You are setting up a 9plan session for a complex task: Port the billing service.")
    for needle in ["9plan_session_create", "9plan_queue_add_batch", "9plan_queue_pull", "9plan_plan_complete"]:
        assert needle in text


async def test_bootstrap_prompt_without_a_task(client):
    for args in ({}, {"task": "   "}):
        text = (await client.get_prompt("bootstrap", args)).messages[0].content.text
        assert text.startswith("You are setting up a 9plan session for a complex task.\n")
        assert "{task_clause}" not in text
