"""The REST writes over a real HTTP server (gunicorn, as `serve` runs it, on the test's
database): a token sent as Bearer, an Idempotency-Key answered once, a stale ETag refused,
and a reader's attempt changing nothing."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from rest_framework.authtoken.models import Token

from sessions_app.models import Plan, Role
from tests.conftest import PYTHON, REPO, plan_fields
from tests.mcp_bridge.http_server import free_port
from tests.sessions_app.api_fixtures import make_user
from tests.sessions_app.conftest import db_rows

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def server(subprocess_env, tmp_path):
    port = free_port()
    log = open(tmp_path / "gunicorn.log", "wb")  # closed when the server stops
    process = subprocess.Popen(
        [PYTHON, "-m", "gunicorn", "nineplan.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        env={**subprocess_env, "NINEPLAN_LOG_LEVEL": "warn"},
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):  # until it answers (or gives up: the log says why)
            try:
                urllib.request.urlopen(f"{base}/api/schema/", timeout=30).close()
                break
            except OSError:  # not listening yet, or its first answer is slow (the machine is busy)
                assert process.poll() is None, (tmp_path / "gunicorn.log").read_text()
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def send(base: str, method: str, path: str, token: str, body=None, **headers: str) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), json.loads(refused.read() or b"{}")


def token_of(username: str, role: str) -> str:
    return Token.objects.create(user=make_user(username, role=role)).key


def test_rest_writes_over_http(server, session, make_plan):
    agent, reader = token_of("ticket-bot", Role.AGENT), token_of("dashboard", Role.READER)
    plans = f"/api/sessions/{session.name}/plans/"

    first = send(server, "POST", plans, agent, plan_fields(goal="From a ticket"), **{"Idempotency-Key": "t-1"})
    again = send(server, "POST", plans, agent, plan_fields(goal="From a ticket"), **{"Idempotency-Key": "t-1"})
    assert first[0] == again[0] == 201 and first[2] == again[2]
    assert Plan.objects.filter(goal="From a ticket").count() == 1
    reused = send(server, "POST", plans, agent, plan_fields(goal="Other"), **{"Idempotency-Key": "t-1"})
    assert reused[0] == 422 and reused[2]["parameter"] == "Idempotency-Key"

    created = send(server, "POST", "/api/sessions/", agent, {"task_description": "BILL-9"})
    assert created[0] == 201 and created[1]["Location"].endswith(f"/api/sessions/{created[2]['name']}/")

    plan_id = first[2]["plans"][0]["id"]
    etag = send(server, "GET", f"{plans}{plan_id}/", agent)[1]["ETag"]
    edited = send(server, "PATCH", f"{plans}{plan_id}/", agent, {"goal": "Sharper"}, **{"If-Match": etag})
    assert edited[0] == 200 and Plan.objects.get(id=plan_id).goal == "Sharper"
    stale = send(server, "PATCH", f"{plans}{plan_id}/", agent, {"goal": "Again"}, **{"If-Match": etag})
    assert stale[0] == 412

    before = db_rows()
    for method, path, body in (
        ("POST", plans, plan_fields()),
        ("POST", "/api/sessions/", {}),
        ("PATCH", f"{plans}{plan_id}/", {"goal": "Mine"}),
    ):
        refused = send(server, method, path, reader, body, **{"If-Match": edited[1]["ETag"]})
        assert refused[0] == 403 and "'agent' or 'manager' role" in refused[2]["detail"], refused
    assert db_rows() == before
