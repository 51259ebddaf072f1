"""The admin's history search (admin/history_search.py): ranked, highlighted, within one
session or all, never a discarded or open plan, and bad input shown, not failed on."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Plan
from tests.sessions_app.admin_fixtures import HOSTILE, busy, enqueue, quiet, reviewer, reviewer_client, text_of  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def search(client, **params):
    response = client.get(reverse("admin:sessions_app_history_search"), params)
    assert response.status_code == 200
    return response


def test_search_ranks_and_highlights(busy, reviewer_client):
    response = search(reviewer_client, q="routes blueprints")
    results = response.context["results"]
    assert results[0]["plan"].id == busy["done1"].id
    assert [r["hit"].rank for r in results] == list(range(1, len(results) + 1))
    html = text_of(response)
    assert "<mark>routes</mark>" in html and "<mark>blueprints</mark>" in html
    # The place and whether every word matched; no score, which would move with the other hits.
    assert "#1<" in html and ">every word<" in html and "score" not in html and "relevance" not in html


def test_search_highlights_the_word_forms_it_matched(busy, reviewer_client):
    html = text_of(search(reviewer_client, q="route blueprint"))
    assert "<mark>routes</mark>" in html and "<mark>blueprints</mark>" in html


def test_search_within_one_session_or_all(busy, reviewer_client, quiet):
    enqueue(quiet, "Draft the routes section")
    services.plan_pull(session_name=quiet.name)
    services.plan_complete(session_name=quiet.name, outcome="Routes section drafted")
    everywhere = {r["plan"].session_id for r in search(reviewer_client, q="routes").context["results"]}
    assert everywhere == {busy["session"].name, quiet.name}
    one = search(reviewer_client, q="routes", session=quiet.name).context["results"]
    assert {r["plan"].session_id for r in one} == {quiet.name}


def test_search_never_returns_discarded_or_open_plans(busy, reviewer_client):
    ids = {r["plan"].id for r in search(reviewer_client, q="PDF export customers refund").context["results"]}
    assert busy["discarded"].id not in ids and busy["active"].id not in ids
    assert not ids & {p.id for p in busy["queued"]}


def test_search_reports_bad_input_without_failing(busy, reviewer_client):
    response = search(reviewer_client, q="routes", session="no-such-session")
    assert response.context["error"].startswith("SESSION_NOT_FOUND: ")
    assert 'id="np-search-error"' in text_of(response)
    bad = search(reviewer_client, q="routes", session="../../etc")
    assert bad.context["error"].startswith("VALIDATION_ERROR: ")
    for odd in ('"foo', "foo AND", "NEAR(", "*", "c++", "col:val"):
        assert search(reviewer_client, q=odd).context["error"] is None
    empty = search(reviewer_client, q="   ")
    assert empty.context["results"] == [] and not empty.context["searched"]


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_search_shows_what_to_type(busy, reviewer_client, query):
    response = search(reviewer_client, q=query)
    html = text_of(response)
    assert 'id="np-search-hint"' in html
    hint = html[html.index('id="np-search-hint"') :].split("</section>")[0]
    assert "words" in hint.lower() and "e.g." in hint
    assert 'id="np-results"' not in html
    assert 'id="np-search-hint"' not in text_of(search(reviewer_client, q="routes"))


def test_search_snippets_show_markdown_as_read_and_start_at_a_word(session, reviewer_client):
    enqueue(session, "Model the invoices")
    services.plan_pull(session_name=session.name)
    outcome = "Wrote " + "the billing models and their tests " * 10 + "Invoice and LineItem **models** with constraints"
    services.plan_complete(session_name=session.name, outcome=outcome)
    (result,) = search(reviewer_client, q="constraints").context["results"]
    snippet = str(result["outcome"])
    assert snippet.startswith("…") and "<mark>constraints</mark>" in snippet
    first = snippet[1:].split()[0]
    assert first in outcome.split(), first
    assert "**" not in snippet and "models with <mark>constraints</mark>" in snippet


def test_search_snippets_escape_agent_text(session, reviewer_client):
    enqueue(session, HOSTILE)
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="alert handled " + HOSTILE)
    html = text_of(search(reviewer_client, q="alert"))
    assert "&lt;script&gt;<mark>alert</mark>(1)&lt;/script&gt;" in html
    assert "<script>alert" not in html and "<img src=x" not in html


def test_discarded_plans_stay_out_even_when_they_match(session, reviewer_client):
    enqueue(session, "Unique zebra word")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="zebra")
    response = search(reviewer_client, q="zebra")
    assert response.context["results"] == []
    assert Plan.objects.filter(status="discarded").count() == 1


def test_a_plan_found_by_its_notes_shows_them_highlighted(session, reviewer_client):
    enqueue(session, "Parse the CSV export")
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Found while caching the header row")
    plan = services.plan_complete(session_name=session.name, outcome="Parser written").plan
    response = search(reviewer_client, q="cache header")
    assert [r["plan"].id for r in response.context["results"]] == [plan.id]
    assert response.context["results"][0]["elsewhere"][0] == "Notes"
    assert "<mark>caching</mark> the <mark>header</mark> row" in text_of(response)
