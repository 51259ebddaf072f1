"""The OpenAPI schema, its docs page, and schema-driven fuzzing of the whole API.

Schemathesis generates requests from the published schema, valid and invalid, and checks
every answer: never a 5xx, every status, content type and body as the schema declares,
invalid input rejected, 401 without credentials. Real session names and plan ids are
mixed into what it draws, so the 200 answers are checked too, not only the 404s.
"""

from __future__ import annotations

import logging
import re

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode

from sessions_app.models import Plan

pytestmark = pytest.mark.django_db

PATHS = [
    "/api/",
    "/api/sessions/",
    "/api/sessions/{name}/",
    "/api/sessions/{name}/queue/",
    "/api/sessions/{name}/plans/",
    "/api/sessions/{name}/plans/{plan_id}/",
    "/api/sessions/{name}/plans/{plan_id}/review/",
    "/api/sessions/{name}/plans/{plan_id}/revisions/",
    "/api/sessions/{name}/plans/{plan_id}/revisions/{number}/",
    "/api/sessions/{name}/validation/",
    "/api/sessions/{name}/export/",
    "/api/history/",
    "/api/events/",
]
# Per operation; enough to reach every parameter's edge cases, few enough for the suite.
EXAMPLES = 40


def test_the_schema_is_served_as_openapi_3_and_lists_every_endpoint(anonymous):
    response = anonymous.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) == set(PATHS)
    # Reads, but for the review decision and the writes that put work in.
    writes = {
        "/api/sessions/": {"get", "post"},
        "/api/sessions/{name}/plans/": {"get", "post"},
        "/api/sessions/{name}/plans/{plan_id}/": {"get", "patch"},
        "/api/sessions/{name}/plans/{plan_id}/review/": {"post"},
    }
    for path, item in schema["paths"].items():
        assert set(item) == writes.get(path, {"get"}), path
        for operation in item.values():
            assert operation["summary"] and operation["description"], path
            assert {"tokenAuth": []} in operation["security"] and {"bearerAuth": []} in operation["security"]
            assert "application/problem+json" in operation["responses"]["401"]["content"]
    assert schema["components"]["securitySchemes"]["tokenAuth"]["in"] == "header"


def test_the_schema_generates_without_warnings(tmp_path):
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    # --fail-on-warn turns any guess drf-spectacular had to make into an error.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    assert "openapi: 3." in target.read_text(encoding="utf-8")


def test_the_docs_page_uses_only_local_assets(anonymous):
    from django.conf import settings as django_settings
    from django.contrib.staticfiles import finders

    response = anonymous.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html.lower() and "/api/schema/" in html
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets), assets
    for asset in assets:
        assert not asset.startswith(("http:", "https:", "//")), asset
        # Every asset is one of our static files (collectstatic ships it with the app).
        assert asset.startswith("/" + django_settings.STATIC_URL.lstrip("/")), asset
        assert finders.find(asset.split("/", 2)[2]), asset
    assert "cdn" not in html.lower()


def test_the_docs_page_answers_other_methods_in_json_without_an_error(anonymous, caplog):
    options = anonymous.options("/api/docs/")
    assert options.status_code == 200 and options["Content-Type"] == "application/json"
    assert "text/html" in options.json()["renders"]
    refused = anonymous.post("/api/docs/")
    assert refused.status_code == 405 and refused.json()["category"] == "METHOD_NOT_ALLOWED"
    wrong_type = anonymous.get("/api/docs/", HTTP_ACCEPT="application/json")
    assert wrong_type.status_code == 406 and wrong_type.json()["category"] == "NOT_ACCEPTABLE"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.fixture
def wsgi_app():
    # As Django's test client does: the handler's signals would otherwise close the
    # connection that holds this test's transaction after every request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(wsgi_app):
    return schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)


@pytest.mark.parametrize("path", PATHS)
def test_the_api_conforms_to_its_schema(api_schema, full_session, reader, path):
    """Valid and invalid requests drawn from the schema, some aimed at real data: no 5xx,
    and every answer as the schema declares (the default checks of schemathesis)."""
    # Driven through hypothesis directly: schemathesis's own pytest integration relies on a
    # private attribute of pytest's nodes that pytest 9.2 no longer has.
    operation = api_schema[path]["POST" if path.endswith("/review/") else "GET"]
    strategies = [operation.as_strategy(mode) for mode in GenerationMode]
    if "{plan_id}" in path:
        for plan_id in Plan.objects.filter(session=full_session).values_list("id", flat=True):
            strategies.append(operation.as_strategy(path_parameters={"name": full_session.name, "plan_id": plan_id}))
    elif "{name}" in path:
        strategies.append(operation.as_strategy(path_parameters={"name": full_session.name}))
    if path in ("/api/events/", "/api/history/"):
        strategies.append(operation.as_strategy(query={"session": full_session.name}))
    auth = {"Authorization": f"Token {Token.objects.create(user=reader).key}"}

    @given(case=st.one_of(strategies))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    def check(case):
        case.call_and_validate(headers=auth)

    check()
