"""The REST API endpoint by endpoint: the right data for a reader, and 401, 403, 404 and 405
for everyone else, always as problem documents; pagination, filters and conditional GETs."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from sessions_app import planfiles, services
from sessions_app.maintenance import invariants
from sessions_app.models import SECTIONS, Event, Plan, Role, Session
from sessions_app.reads import queries
from tests.conftest import plan_fields
from tests.sessions_app.api_fixtures import (
    ENDPOINTS,
    PROBLEM,
    WITH_SESSION_IN_PATH,
    assert_problem,
    completed_plan,
    fill_session,
    make_user,
    plans_by_status,
    token_client,
)

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, int, int]:
    return Session.objects.count(), Plan.objects.count(), Event.objects.count()


# --- access -----------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_endpoint_answers_a_reader(api, full_session, endpoint):
    response = api.get(ENDPOINTS[endpoint](full_session, completed_plan(full_session)))
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    # Plan text must not be kept by any cache, the client's own included.
    assert set(response["Cache-Control"].replace(" ", "").split(",")) == {"private", "no-cache", "no-store"}


def test_a_reader_of_another_project_sees_nothing_of_this_one(full_session):
    services.project_create(name="elsewhere")
    elsewhere = token_client(make_user("elsewhere-reader", role=Role.READER, project="elsewhere"))
    assert elsewhere.get("/api/sessions/").json()["count"] == 0
    missing = assert_problem(elsewhere.get("/api/sessions/no-such-name/"), 404, "SESSION_NOT_FOUND")
    hidden = assert_problem(elsewhere.get(f"/api/sessions/{full_session.name}/"), 404, "SESSION_NOT_FOUND")
    assert hidden["detail"] == missing["detail"].replace("no-such-name", full_session.name)
    assert elsewhere.get("/api/events/").json()["results"] == []


def test_the_browsable_api_works_with_a_session_login(client, reader, full_session):
    client.force_login(reader)
    response = client.get(f"/api/sessions/{full_session.name}/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert full_session.name in response.content.decode()


def breadcrumbs(html: str) -> list[tuple[str, str]]:
    crumbs = re.search(r'<ul class="breadcrumb">(.*?)</ul>', html, re.S).group(1)
    return re.findall(r'<a href="([^"]+)">([^<]+)</a>', crumbs)


def test_the_browsable_pages_breadcrumbs_lead_back_to_the_api_root(client, reader, full_session):
    client.force_login(reader)
    name, plan = full_session.name, completed_plan(full_session)
    page = client.get(f"/api/sessions/{name}/plans/{plan.id}/", HTTP_ACCEPT="text/html")
    assert breadcrumbs(page.content.decode()) == [
        ("/api/", "9plan API"),
        ("/api/sessions/", "Session List"),
        (f"/api/sessions/{name}/", "Session Detail"),
        (f"/api/sessions/{name}/plans/", "Session Plans"),
        (f"/api/sessions/{name}/plans/{plan.id}/", "Plan Detail"),
    ]
    root = client.get("/api/", HTTP_ACCEPT="text/html")
    assert root.status_code == 200 and breadcrumbs(root.content.decode()) == [("/api/", "9plan API")]


def test_the_api_root_lists_every_endpoint_by_absolute_url(api, full_session):
    response = api.get("/api/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "sessions", "session", "session_queue", "session_plans", "plan", "plan_review", "plan_revisions",
        "plan_revision", "session_validation",
        "session_export", "history", "events", "schema", "docs",
    }  # fmt: skip
    assert body["plan"] == "http://testserver/api/sessions/{name}/plans/{plan_id}/"
    filled = {"name": full_session.name, "plan_id": completed_plan(full_session).id, "number": 1}
    for key, url in body.items():
        if key == "plan_review":
            continue  # POST only (tests/sessions_app/api/test_review_views.py)
        assert url.startswith("http://testserver/api/"), key
        url = url.format(**filled)
        if key == "history":
            url += "?q=invoices"
        assert api.get(url).status_code == 200, key
    # The schema lists the same endpoints (the root itself aside).
    schema_paths = set(api.get("/api/schema/?format=json").json()["paths"]) - {"/api/"}
    templated = {urlparse(url).path for key, url in body.items() if key not in ("schema", "docs")}
    assert templated == schema_paths


# The writes that put work in (api/write_views.py); every other method of these endpoints is a 405.
WRITES = {"sessions": "post", "plans": "post", "plan": "patch"}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_reader_writes_nothing_through_any_endpoint(api, full_session, endpoint):
    before = counts()
    url = ENDPOINTS[endpoint](full_session, completed_plan(full_session))
    for method in ("post", "put", "patch", "delete"):
        response = getattr(api, method)(url, {"goal": "overwrite", "status": "completed"}, format="json")
        if WRITES.get(endpoint) == method:
            body = assert_problem(response, 403, "PERMISSION_DENIED")
            assert "'agent' or 'manager' role" in body["detail"]
            continue
        assert_problem(response, 405, "METHOD_NOT_ALLOWED")
        allowed = {m.strip() for m in response["Allow"].split(",")}
        writes = {WRITES[endpoint].upper()} if endpoint in WRITES else set()
        assert "GET" in allowed and allowed & {"POST", "PUT", "PATCH", "DELETE"} == writes
    assert counts() == before
    assert Plan.objects.filter(goal="overwrite").count() == 0


@pytest.mark.parametrize("endpoint", WITH_SESSION_IN_PATH)
def test_an_unknown_session_is_not_found(api, full_session, endpoint):
    ghost = Session(name="brave-amber-otter" if full_session.name != "brave-amber-otter" else "calm-amber-otter")
    body = assert_problem(api.get(ENDPOINTS[endpoint](ghost, completed_plan(full_session))), 404, "SESSION_NOT_FOUND")
    assert ghost.name in body["detail"]


TRAVERSALS = [
    "..",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e",
    "brave-amber-otter%2F..%2F..",
    "Brave-Amber-Otter",
    "brave-amber-otter%00",
    "brave_amber_otter",
    "a" * 70 + "-b-c",
    "%E2%80%AE-amber-otter",
]


@pytest.mark.parametrize("endpoint", WITH_SESSION_IN_PATH)
def test_a_malformed_or_traversing_session_name_is_not_found(api, full_session, endpoint):
    for name in TRAVERSALS:
        url = ENDPOINTS[endpoint](full_session, completed_plan(full_session)).replace(full_session.name, name)
        response = api.get(url)
        assert response.status_code == 404, (url, response.content)
        assert response["Content-Type"] == PROBLEM
        assert response.json()["category"] in ("SESSION_NOT_FOUND", "NOT_FOUND")


def test_an_unknown_or_malformed_plan_id_is_not_found(api, full_session):
    for plan_id in ["zzzzz", "..", "ABCDE", "abcd", "abcdef", "..%2F..%2Fx", "ab%00cd", "a.txt", "%2e%2e"]:
        response = api.get(f"/api/sessions/{full_session.name}/plans/{plan_id}/")
        assert response.status_code == 404, plan_id
        assert response.json()["category"] in ("PLAN_NOT_FOUND", "NOT_FOUND")
    unknown = api.get(f"/api/sessions/{full_session.name}/plans/zzzzz/").json()
    assert unknown["category"] == "PLAN_NOT_FOUND" and "zzzzz" in unknown["detail"]


def test_a_plan_is_found_only_under_its_own_session(api, full_session):
    other = services.session_create(task_description="another")
    plan = completed_plan(full_session)
    assert_problem(api.get(f"/api/sessions/{other.name}/plans/{plan.id}/"), 404, "PLAN_NOT_FOUND")


def test_an_unknown_path_is_a_problem_document_even_without_credentials(anonymous):
    assert_problem(anonymous.get("/api/no-such-thing/"), 404, "NOT_FOUND")


# --- sessions ---------------------------------------------------------------------------


def _sessions_fixture():
    idle = services.session_create(task_description="Idle session about payroll")
    busy = fill_session(services.session_create(task_description="Busy session about invoices"))
    drained = fill_session(services.session_create(task_description="Drained"), queued=0, active=False)
    return idle, busy, drained


def test_the_sessions_list_carries_the_same_counts_as_the_core_query(api):
    _sessions_fixture()
    listed = {row["name"]: row for row in api.get("/api/sessions/").json()["results"]}
    expected, total = queries.session_list(limit=100)
    assert len(listed) == total == 3
    for session in expected:
        row = listed[session.name]
        assert row["queue_length"] == session.queue_length
        assert row["completed_count"] == session.completed_count
        assert row["discarded_count"] == session.discarded_count
        assert row["has_active_plan"] == session.has_active_plan
        assert row["task_description"] == session.task_description
        assert row["url"].endswith(f"/api/sessions/{session.name}/")


def test_the_sessions_list_filters(api):
    idle, busy, drained = _sessions_fixture()

    def names(query: str) -> set[str]:
        response = api.get(f"/api/sessions/?{query}")
        assert response.status_code == 200, response.content
        return {row["name"] for row in response.json()["results"]}

    assert names("has_active_plan=true") == {busy.name}
    assert names("has_active_plan=false") == {idle.name, drained.name}
    assert names("has_queued=true") == {busy.name}
    assert names("has_queued=false") == {idle.name, drained.name}
    assert names("search=PAYROLL") == {idle.name}
    assert names(f"search={busy.name}") == {busy.name}
    assert names("has_queued=false&search=drain") == {drained.name}


@pytest.mark.parametrize(
    "query, parameter",
    [
        ("has_active_plan=True", "has_active_plan"),
        ("has_active_plan=1", "has_active_plan"),
        ("has_queued=yes", "has_queued"),
        ("page=0", "page"),
        ("page=-1", "page"),
        ("page=abc", "page"),
        ("page=1&page=2", "page"),
        ("page=%D9%A7", "page"),
        ("page=99999999999999999999999", "page"),
        ("page_size=0", "page_size"),
        ("page_size=101", "page_size"),
        ("search=a%00b", "search"),
        ("search=" + "x" * 201, "search"),
    ],
)
def test_a_bad_list_parameter_is_a_400_naming_it(api, query, parameter):
    body = assert_problem(api.get(f"/api/sessions/?{query}"), 400, "VALIDATION_ERROR", parameter=parameter)
    assert parameter in body["detail"]


def test_a_bad_choice_names_the_accepted_values(api):
    body = assert_problem(api.get("/api/sessions/?has_queued=TRUE"), 400, "VALIDATION_ERROR", "has_queued")
    assert "'true'" in body["detail"] and "'false'" in body["detail"]


def test_pages_cover_every_session_once_in_a_stable_order(api):
    made = {services.session_create().name for _ in range(5)}
    seen, url = [], "/api/sessions/?page_size=2"
    while url:
        body = api.get(url).json()
        assert body["count"] == 5 and len(body["results"]) <= 2
        seen += [row["name"] for row in body["results"]]
        url = body["next"]
    assert sorted(seen) == sorted(made) and len(seen) == 5
    ordered = list(Session.objects.order_by("-created_at", "name").values_list("name", flat=True))
    assert seen == ordered
    last = api.get("/api/sessions/?page_size=2&page=3").json()
    assert last["next"] is None and parse_qs(urlparse(last["previous"]).query)["page"] == ["2"]


def test_a_page_past_the_end_is_empty(api, full_session):
    body = api.get("/api/sessions/?page=50").json()
    assert body["results"] == [] and body["count"] == 1 and body["next"] is None


# --- one session, its queue and plans ---------------------------------------------------


def test_a_sessions_state(api, full_session):
    body = api.get(f"/api/sessions/{full_session.name}/").json()
    state = queries.session_state(full_session.name)
    assert body["name"] == full_session.name
    assert body["task_description"] == "Port billing to Django"
    assert body["queue_length"] == 2 and body["completed_count"] == 1 and body["discarded_count"] == 1
    assert body["active_plan"]["id"] == state.active.id and body["active_plan"]["status"] == "active"
    assert [p["id"] for p in body["queue"]] == [p.id for p in state.queue]
    assert body["queue_url"].endswith(f"/api/sessions/{full_session.name}/queue/")


def test_the_queue_is_in_pull_order(api, session, make_plan):
    back = make_plan(session, goal="back")
    front = make_plan(session, position="front", goal="front")
    later = make_plan(session, goal="later")
    body = api.get(f"/api/sessions/{session.name}/queue/").json()
    assert [p["id"] for p in body["results"]] == [front.id, back.id, later.id]
    assert body["count"] == 3
    page2 = api.get(f"/api/sessions/{session.name}/queue/?page_size=2&page=2").json()
    assert [p["id"] for p in page2["results"]] == [later.id]
    assert services.plan_pull(session_name=session.name).id == body["results"][0]["id"]


@pytest.mark.parametrize("status", ["queued", "active", "completed", "discarded"])
def test_plans_by_status(api, full_session, status):
    body = api.get(f"/api/sessions/{full_session.name}/plans/?status={status}").json()
    expected = plans_by_status(full_session)[status]
    assert [p["id"] for p in body["results"]] == [p.id for p in expected]
    assert {p["status"] for p in body["results"]} == {status}


def test_all_plans_oldest_first(api, full_session):
    body = api.get(f"/api/sessions/{full_session.name}/plans/").json()
    expected = list(Plan.objects.filter(session=full_session).order_by("created_at", "id").values_list("id", flat=True))
    assert [p["id"] for p in body["results"]] == expected and body["count"] == 5


def test_an_unknown_status_is_rejected(api, full_session):
    body = assert_problem(
        api.get(f"/api/sessions/{full_session.name}/plans/?status=Completed"), 400, "VALIDATION_ERROR", "status"
    )
    assert "'completed'" in body["detail"] and "'discarded'" in body["detail"]


@pytest.mark.parametrize("status", ["completed", "discarded", "active", "queued"])
def test_a_plan_in_any_state_with_every_section_and_its_events(api, full_session, status):
    plan = plans_by_status(full_session)[status][0]
    body = api.get(f"/api/sessions/{full_session.name}/plans/{plan.id}/").json()
    for name in (*SECTIONS, "outcome", "discard_reason", "status", "version"):
        assert body[name] == getattr(plan, name), name
    # The place in the queue (1 = next), never the internal sort key.
    assert body["queue_position"] == (queries.queue_place(plan) if status == "queued" else None)
    assert "sort_key" not in body
    events = list(Event.objects.filter(plan=plan).order_by("id"))
    assert [(e["id"], e["kind"], e["actor"], e["detail"]) for e in body["events"]] == [
        (e.id, e.kind, e.actor, e.detail) for e in events
    ]
    assert body["events_count"] == len(events) >= 1
    assert body["session"] == full_session.name


def test_a_plans_event_list_is_capped_with_a_count(api, session, make_plan):
    from sessions_app.api import reads as api_reads

    make_plan(session)
    services.plan_pull(session_name=session.name)
    for i in range(api_reads.PLAN_EVENTS_SHOWN + 5):
        services.plan_note(session_name=session.name, text=f"note {i}")
    plan = Plan.objects.get(session=session)
    body = api.get(f"/api/sessions/{session.name}/plans/{plan.id}/").json()
    assert len(body["events"]) == api_reads.PLAN_EVENTS_SHOWN
    assert body["events_count"] == api_reads.PLAN_EVENTS_SHOWN + 7
    assert "plan=" + plan.id in body["events_url"]


# --- history search and the invariant check --------------------------------------------


@pytest.fixture
def history(session, complete_plan):
    return {
        "both": complete_plan(
            session, goal="Cache invoices", context="invoices cache warmup", outcome="invoices cached"
        ),
        "one": complete_plan(session, goal="Render invoices", outcome="PDF rendering done"),
        "other": complete_plan(session, goal="Payroll export", outcome="CSV done"),
    }


def test_history_search_in_bm25_order_with_snippets(api, session, history):
    body = api.get("/api/history/?q=invoices%20cache").json()
    ids = [hit["id"] for hit in body["results"]]
    expected = [hit.plan.id for hit in queries.history_search("invoices cache", session_name=None, max_results=10)]
    assert ids == expected and ids[0] == history["both"].id and history["other"].id not in ids
    assert [hit["rank"] for hit in body["results"]] == list(range(1, len(ids) + 1))
    top = body["results"][0]
    assert "invoices" in top["snippet"].lower() and top["outcome"] == "invoices cached"
    assert top["url"].endswith(f"/api/sessions/{session.name}/plans/{history['both'].id}/")


def test_history_search_finds_word_forms_ranked_every_word_first(api, session, history):
    # The README's example: "invoice" and "cache" stand for "invoices" and "cached".
    results = api.get("/api/history/?q=invoice%20cache").json()["results"]
    assert [hit["id"] for hit in results] == [history["both"].id, history["one"].id]
    assert [hit["rank"] for hit in results] == [1, 2]
    assert [hit["every_word"] for hit in results] == [True, False]
    assert "score" not in results[0] and "relevance" not in results[0]


def test_history_search_in_one_session_or_all(api, session, history, complete_plan):
    elsewhere = services.session_create()
    foreign = complete_plan(elsewhere, goal="Invoices elsewhere", outcome="invoices too")
    everywhere = {hit["id"] for hit in api.get("/api/history/?q=invoices").json()["results"]}
    assert foreign.id in everywhere and history["both"].id in everywhere
    here = {hit["id"] for hit in api.get(f"/api/history/?q=invoices&session={session.name}").json()["results"]}
    assert foreign.id not in here and history["both"].id in here


def test_history_search_never_finds_discarded_or_open_plans(api, full_session):
    found = {hit["id"] for hit in api.get("/api/history/?q=goal&page_size=50").json()["results"]}
    completed = {p.id for p in plans_by_status(full_session)["completed"]}
    assert found == completed


def test_history_search_pages(api, session, complete_plan):
    made = {complete_plan(session, goal=f"Invoice batch {i}", outcome="invoice").id for i in range(5)}
    first = api.get("/api/history/?q=invoice&page_size=2").json()
    second = api.get(first["next"]).json()
    third = api.get(second["next"]).json()
    seen = [h["id"] for page in (first, second, third) for h in page["results"]]
    assert len(seen) == 5 and set(seen) == made and third["next"] is None
    assert [h["rank"] for page in (first, second, third) for h in page["results"]] == [1, 2, 3, 4, 5]


# What both the history search and the event feed refuse alike: a session that is no
# session name or no session, a page past 100 answers, and a second word for a page's size.
BAD_ON_BOTH = [
    ("session=..%2Fetc", 400, "VALIDATION_ERROR", "session"),
    ("session=../../etc", 400, "VALIDATION_ERROR", "session"),
    ("page_size=101", 400, "VALIDATION_ERROR", "page_size"),
    ("limit=5", 400, "VALIDATION_ERROR", "limit"),
    ("session=brave-amber-otter", 404, "SESSION_NOT_FOUND", None),
]

# The reads that take query parameters, a bad query each, and the problem it gets: a 400
# names the parameter, a 404 names none.
BAD_QUERIES = [
    ("/api/history/", "", 400, "VALIDATION_ERROR", "q"),
    ("/api/history/", "q=", 400, "VALIDATION_ERROR", "q"),
    ("/api/history/", "q=%E2%80%83%C2%85", 400, "VALIDATION_ERROR", "q"),
    ("/api/history/", "q=a%00", 400, "VALIDATION_ERROR", "q"),
    *[("/api/history/", f"q=x&{query}", *problem) for query, *problem in BAD_ON_BOTH],
    ("/api/events/", "page_size=0", 400, "VALIDATION_ERROR", "page_size"),
    # The feed pages by its cursor: no page numbers.
    ("/api/events/", "page=2", 400, "VALIDATION_ERROR", "page"),
    ("/api/events/", "plan=ABCDE", 400, "VALIDATION_ERROR", "plan"),
    ("/api/events/", "plan=zzzzz", 404, "PLAN_NOT_FOUND", None),
    *[("/api/events/", query, *problem) for query, *problem in BAD_ON_BOTH],
]


@pytest.mark.parametrize("path, query, status, category, parameter", BAD_QUERIES)
def test_reads_reject_bad_parameters(api, full_session, path, query, status, category, parameter):
    body = assert_problem(api.get(f"{path}?{query}"), status, category, parameter)
    assert body.get("parameter") == parameter


@pytest.mark.parametrize("q", ['"foo', "foo AND", "NEAR(", "*", "-x", "col:val", "(", "it's", "c++", "🙂"])
def test_history_search_takes_any_words(api, history, q):
    from urllib.parse import quote

    assert api.get(f"/api/history/?q={quote(q)}").status_code == 200


def test_the_invariant_check(api, full_session, sessions_dir):
    url = f"/api/sessions/{full_session.name}/validation/"
    body = api.get(url).json()
    assert body["valid"] is True and body["issues"] == [] and set(body["invariants"]) == set(invariants.INVARIANTS)
    queued = plans_by_status(full_session)["queued"][0]
    planfiles.plan_path(full_session.name, queued.id).unlink()
    body = api.get(url).json()
    assert body["valid"] is False and body["invariants"]["files_match_database"] is False
    assert any(queued.id in issue for issue in body["issues"])


def test_a_fresh_session_without_plans(api, session):
    body = api.get(f"/api/sessions/{session.name}/").json()
    assert body["active_plan"] is None and body["queue"] == [] and body["queue_length"] == 0
    assert api.get(f"/api/sessions/{session.name}/plans/").json()["results"] == []


def test_plan_fields_helper_matches_what_is_stored(api, session, make_plan):
    # Text is returned exactly as stored: no trimming, escaping or truncation.
    text = "  leading spaces\n\ttabs and ünïcödé — \u2028line sep\n" + "x" * 5000
    plan = make_plan(session, context=text)
    body = api.get(f"/api/sessions/{session.name}/plans/{plan.id}/").json()
    assert body["context"] == text == Plan.objects.get(id=plan.id).context
    assert body["goal"] == plan_fields()["goal"]


def test_a_history_hit_reads_the_same_whatever_else_is_indexed(api, session, history, complete_plan):
    def hit_of(plan_id: str) -> dict:
        results = api.get("/api/history/?q=invoices%20pdf").json()["results"]
        found = next(hit for hit in results if hit["id"] == plan_id)
        return {k: v for k, v in found.items() if k != "rank"}

    before = hit_of(history["one"].id)
    for i in range(6):
        complete_plan(session, goal=f"Invoices batch {i}", outcome="PDF of the invoices")
    assert hit_of(history["one"].id) == before
    assert before["every_word"] is True and "relevance" not in before


def test_a_history_hit_found_by_its_notes_has_them_as_its_snippet(api, session):
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Parse the CSV export"))
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Found while caching the header row")
    plan = services.plan_complete(session_name=session.name, outcome="Parser written").plan
    results = api.get("/api/history/?q=cache%20header").json()["results"]
    assert [(hit["id"], hit["snippet"]) for hit in results] == [(plan.id, "Found while caching the header row")]
