"""What the README and docs/ promise about 9plan's behaviour, checked against the code."""

from __future__ import annotations

import re

import pytest

from mcp_bridge import prompts
from tests.conftest import REPO
from tests.sessions_app.api_fixtures import (  # noqa: F401  (fixtures)
    anonymous,
    api,
    full_session,
    reader,
)

DEPLOYMENT = REPO / "docs" / "deployment.md"


def sentences(path) -> list[str]:
    text = " ".join(path.read_text(encoding="utf-8").split())
    return re.split(r"(?<=[.!?:])\s+", text)


def test_the_deployment_guide_credits_only_texts_that_say_to_pass_session_name_on_every_call():
    claims = [s for s in sentences(DEPLOYMENT) if "session_name" in s and "on every call" in s]
    assert claims
    for sentence in claims:
        if "bootstrap" in sentence:
            assert "on every call" in prompts.bootstrap(), sentence
        if "instructions" in sentence:
            assert "on every call" in " ".join(prompts.INSTRUCTIONS.split()), sentence


README = REPO / "README.md"
TOOLS_REFERENCE = REPO / "docs" / "tools.md"
REST_REFERENCE = REPO / "docs" / "rest.md"
BASE = "http://127.0.0.1:8000"


def rest_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("## REST API") :].split("\n## ", 1)[0]


def shell_blocks(text: str) -> list[list[str]]:
    return [block.strip().splitlines() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def test_every_shell_variable_in_the_readme_is_set_before_it_is_used():
    for block in shell_blocks(README.read_text(encoding="utf-8")):
        assigned: set[str] = set()
        for line in block:
            command = line.split("#", 1)[0]
            for used in re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", command):
                assert used in assigned, f"${used} is used before it is set: {line}"
            assigned |= set(re.findall(r"^([A-Z_][A-Z0-9_]*)=", command.strip()))


@pytest.mark.django_db
def test_the_readmes_rest_examples_answer(api, full_session):
    calls = [line for block in shell_blocks(rest_section()) for line in block if line.startswith("curl ")]
    assert calls
    cursor = None
    for line in calls:
        url = re.search(rf'{re.escape(BASE)}(/api/[^"\s]*)', line).group(1)
        if "$CURSOR" in url:
            assert cursor is not None, "the feed is read with a cursor before a first read gave one"
            url = url.replace("$CURSOR", cursor)
        response = api.get(url)
        assert response.status_code == 200, (line, response.content)
        if url.startswith("/api/events/"):
            cursor = response.json()["next_cursor"]


@pytest.mark.django_db
def test_what_the_readme_calls_public_is_exactly_what_answers_without_credentials(api, anonymous, full_session):
    assert "Only the OpenAPI schema and its docs page are public" in " ".join(rest_section().split())
    plan = full_session.plans.first()
    public = set()
    for key, url in api.get("/api/").json().items():
        path = url.replace("http://testserver", "").format(name=full_session.name, plan_id=plan.id, number=1)
        status = anonymous.get(path + ("?q=x" if key == "history" else "")).status_code
        assert status in (200, 401), (key, status)
        if status == 200:
            public.add(key)
    assert public == {"schema", "docs"}
    assert anonymous.get("/api/").status_code == 401


# What resume reports (sessions_app/reads/interventions.py), as the tools' reference names it.
RESUME_REPORTS = {
    "plan_discarded": "discards",
    "plan_requeued": "plans taken back to the queue",
    "plan_moved": "moves in the queue",
    "plan_approved": "approvals",
    "plan_rejected": "rejections",
    "plan_held": "holds",
    "plan_restored": "text restores",
    "plan_edited": "text edits",
}


def test_the_tools_reference_says_what_resume_reports_of_others_changes():
    from sessions_app.reads import interventions

    row = next(
        line
        for line in TOOLS_REFERENCE.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `9plan_session_resume`")
    )
    # A new kind of intervention must be named in the reference too (and one dropped, removed).
    assert set(RESUME_REPORTS) == set(interventions.INTERVENTION_KINDS)
    for words in RESUME_REPORTS.values():
        assert words in row, words
    assert f"the newest {interventions.INTERVENTIONS_SHOWN}" in row
    assert "changed meanwhile" not in row


def test_the_design_says_the_rest_snippet_is_plain_text(api, full_session):
    design = " ".join((REPO / "docs" / "design.md").read_text(encoding="utf-8").split())
    assert "the REST snippet highlight" not in design
    assert "the REST API's `snippet` is plain text" in design
    hits = api.get("/api/history/?q=invoices").json()["results"]
    assert hits and all("<mark>" not in hit["snippet"] for hit in hits)


@pytest.mark.django_db
def test_the_rest_references_page_size_is_the_one_every_paged_endpoint_takes(api, full_session):
    from sessions_app.api import params

    text = " ".join(REST_REFERENCE.read_text(encoding="utf-8").split())
    assert f"Answers come in pages of `page_size` items, 1 to {params.MAX_PAGE_SIZE}" in text
    for path in ("/api/sessions/", f"/api/sessions/{full_session.name}/plans/", "/api/history/?q=goal", "/api/events/"):
        glue = "&" if "?" in path else "?"
        assert api.get(f"{path}{glue}page_size={params.MAX_PAGE_SIZE}").status_code == 200, path
        assert api.get(f"{path}{glue}page_size={params.MAX_PAGE_SIZE + 1}").status_code == 400, path


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_deployment_guide_names_the_protocol_versions_the_sdk_clients_speak(sessions_dir):
    # mcp.client.Client speaks the stateless version; a bare ClientSession's handshake an older one.
    from mcp import Client
    from mcp.client.session import LATEST_HANDSHAKE_VERSION

    from mcp_bridge.server import build_server

    claim = next(s for s in sentences(DEPLOYMENT) if "`mcp.client.Client` speaks it" in s)
    async with Client(build_server()) as client:
        assert client.protocol_version == "2026-07-28"
    text = " ".join(DEPLOYMENT.read_text(encoding="utf-8").split())
    assert "The protocol version 2026-07-28 is stateless" in text and claim
    assert f"negotiates {LATEST_HANDSHAKE_VERSION} by the older handshake" in text
