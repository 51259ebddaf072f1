"""Proves webhooks with a real receiver on loopback and real delivering processes: every
message is signed so the Standard Webhooks library verifies it; a receiver that fails gets
it again with the same webhook-id; a delivering process killed mid-attempt delivers after a
restart; a private URL is refused when subscribed and when sent to; no write waits for a
receiver; and a receiver that trickles its answer neither holds up another's messages nor
gets a message twice (docs/design.md, "Webhooks")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks import Webhook

from sessions_app import services
from sessions_app.models import WebhookDelivery, WebhookSubscription
from tests.conftest import MANAGE, PYTHON, plan_fields  # the receivers fixture is there too

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]

WAIT = 60  # seconds a proof waits for something before it fails


@pytest.fixture
def env(subprocess_env, settings) -> dict[str, str]:
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    return {
        **subprocess_env,
        "NINEPLAN_WEBHOOKS_ALLOW_PRIVATE": "true",
        "NINEPLAN_WEBHOOKS_RETRY_DELAYS": "0,0,0",
        "NINEPLAN_WEBHOOKS_INTERVAL": "1",
        "NINEPLAN_WEBHOOKS_TIMEOUT": "5",
        "NINEPLAN_WEBHOOKS_CLAIM_SECONDS": "10",
    }


def deliver_once(env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [PYTHON, MANAGE, "nineplan_webhooks", "--once"], env=env, capture_output=True, text=True, timeout=WAIT
    )
    assert done.returncode == 0, done.stderr
    return done


def loop(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [PYTHON, MANAGE, "nineplan_webhooks"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(WAIT)


def subscribe(url: str, events: str = "all") -> str:
    return services.webhook_subscribe(project="default", url=url, events=events, actor="agent").secret


def submit_a_plan(session) -> str:
    """A plan completed in a reviewed session: it enters review."""
    plan = services.plan_enqueue(session_name=session.name, review=True, **plan_fields()).plan
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="done")
    return plan.id


def wait_until(check, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_each_message_is_signed_so_the_library_verifies_it(session, env, receivers):
    receiver = receivers()
    secret = subscribe(receiver.url)
    plan_id = submit_a_plan(session)
    services.plan_review(session_name=session.name, plan_id=plan_id, decision="approve", notes="", actor="x")
    deliver_once(env)
    assert len(receiver.got) == 2
    bodies = [Webhook(secret).verify(body, headers) for headers, body in receiver.got]
    assert [(b["type"], b["data"]["kind"]) for b in bodies] == [
        ("plan.in_review", "plan_submitted"),
        ("session.queue_emptied", "plan_approved"),
    ]
    assert {(b["data"]["plan"], b["data"]["session"], b["data"]["project"]) for b in bodies} == {
        (plan_id, session.name, "default")
    }
    assert receiver.ids() == [f"msg_{d.id}" for d in WebhookDelivery.objects.order_by("id")]
    # Signed with this subscription's secret and no other, over these very bytes.
    headers, body = receiver.got[0]
    other = services.webhook_subscribe(project="default", url=receiver.url, events="all", actor="agent").secret
    with pytest.raises(Exception, match="No matching signature"):
        Webhook(other).verify(body, headers)
    with pytest.raises(Exception, match="No matching signature"):
        Webhook(secret).verify(body.replace(b"done", b"DONE") + b" ", headers)
    assert set(WebhookDelivery.objects.values_list("status", "attempts", "last_response_code")) == {
        ("delivered", 1, 200)
    }


def test_a_receiver_that_fails_gets_the_message_again_with_the_same_id(session, env, receivers):
    receiver = receivers(500, 200)
    secret = subscribe(receiver.url, events="plan.in_review")
    submit_a_plan(session)
    deliver_once(env)
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_response_code) == ("pending", 1, 500)
    deliver_once(env)
    row.refresh_from_db()
    assert (row.status, row.attempts, row.last_response_code) == ("delivered", 2, 200)
    assert receiver.ids() == [f"msg_{row.id}"] * 2
    first, second = (Webhook(secret).verify(body, headers) for headers, body in receiver.got)
    assert first == second
    # What a receiver does with them: it keeps one message per webhook-id.
    assert len({headers["webhook-id"]: body for headers, body in receiver.got}) == 1


def test_a_delivering_process_killed_mid_attempt_delivers_after_a_restart(session, env, receivers):
    receiver = receivers("stall", 200)
    secret = subscribe(receiver.url, events="plan.in_review")
    submit_a_plan(session)
    # A timeout far longer than the kill takes, so the attempt is cut by the kill, not by it.
    env = {**env, "NINEPLAN_WEBHOOKS_TIMEOUT": "20", "NINEPLAN_WEBHOOKS_CLAIM_SECONDS": "25"}
    first = loop(env)
    try:
        receiver.wait_for(1)  # the loop is inside its attempt: the receiver holds it
        first.send_signal(signal.SIGKILL)
        first.wait(WAIT)
    finally:
        stop(first)
    row = WebhookDelivery.objects.get()
    # The attempt never ended, so nothing of it was recorded: the claim still stands.
    assert row.status == "pending" and row.attempts == 0 and row.claimed_until is not None
    second = loop(env)
    try:
        receiver.wait_for(2)  # once the dead loop's claim has passed
        wait_until(lambda: WebhookDelivery.objects.get().status == "delivered", "the delivery to be recorded")
    finally:
        stop(second)
    row.refresh_from_db()
    assert row.last_response_code == 200 and row.attempts >= 1
    # The same message each time: a receiver keeps the first and drops the rest.
    assert set(receiver.ids()) == {f"msg_{row.id}"} and len(receiver.ids()) >= 2
    assert {Webhook(secret).verify(b, h)["type"] for h, b in receiver.got} == {"plan.in_review"}


def test_every_event_arrives_at_least_once_and_dedupes_by_id(session, env, receivers):
    receiver = receivers(500, "stall", 503)
    receiver.release.set()  # the stall answers at once here
    secret = subscribe(receiver.url, events="plan.in_review")
    plans = [submit_a_plan(session) for _ in range(4)]
    for _ in range(4):
        deliver_once(env)
    seen: dict[str, dict] = {}
    for headers, body in receiver.got:
        seen.setdefault(headers["webhook-id"], Webhook(secret).verify(body, headers))
    assert len(receiver.got) > len(seen) == 4
    assert sorted(m["data"]["plan"] for m in seen.values()) == sorted(plans)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_a_private_url_is_refused_when_subscribed_and_when_sent_to(session, env, receivers, settings):
    receiver = receivers()
    closed = {**env, "NINEPLAN_WEBHOOKS_ALLOW_PRIVATE": "false"}
    added = subprocess.run(
        [PYTHON, MANAGE, "nineplan_webhook", "add", "default", receiver.url, "--events", "all"],
        env=closed,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert added.returncode == 1 and added.stdout == ""
    assert "resolves to 127.0.0.1, a loopback address" in added.stderr
    assert not WebhookSubscription.objects.exists()
    # Subscribed while private URLs were allowed, sent to once they no longer are.
    subscribe(receiver.url, events="plan.in_review")
    submit_a_plan(session)
    deliver_once(closed)
    row = WebhookDelivery.objects.get()
    assert receiver.got == []
    assert (row.status, row.attempts, row.last_response_code) == ("pending", 1, None)
    assert row.last_error.startswith("refused: url: it resolves to 127.0.0.1, a loopback address")


def test_a_redirect_is_not_followed(session, env, receivers):
    target = receivers()

    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(307)
            self.send_header("location", target.url)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    redirecting = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=redirecting.serve_forever, daemon=True).start()
    try:
        subscribe(f"http://127.0.0.1:{redirecting.server_port}/", events="plan.in_review")
        submit_a_plan(session)
        deliver_once(env)
    finally:
        redirecting.shutdown()
        redirecting.server_close()
    row = WebhookDelivery.objects.get()
    assert target.got == []
    assert (row.status, row.attempts, row.last_response_code) == ("pending", 1, 307)
    assert "redirect, not followed" in row.last_error


def test_no_write_waits_for_a_receiver(session, env, receivers):
    receiver = receivers("stall", "stall")
    subscribe(receiver.url, events="plan.in_review")
    submit_a_plan(session)
    sender = loop(env)
    try:
        receiver.wait_for(1)
        # The loop is held inside an attempt until the test releases it, which it does only
        # after these writes have returned: had any of them waited for the receiver, the
        # test would hang here instead of reaching the release.
        second = submit_a_plan(session)
        third = submit_a_plan(session)
        assert not receiver.release.is_set()
        assert WebhookDelivery.objects.filter(status="pending").count() == 3
        assert {d.event.plan_id for d in WebhookDelivery.objects.filter(attempts=0).select_related("event")} >= {
            second,
            third,
        }
        receiver.release.set()
        wait_until(
            lambda: set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"},
            "every message to be delivered",
        )
    finally:
        stop(sender)
    assert len(set(receiver.ids())) == 3


def test_serve_sends_from_its_workers(session, env, receivers, tmp_path):
    import socket

    receiver = receivers()
    secret = subscribe(receiver.url, events="plan.in_review")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [PYTHON, MANAGE, "serve", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        plan_id = submit_a_plan(session)
        receiver.wait_for(1)
        wait_until(lambda: WebhookDelivery.objects.get().status == "delivered", "serve to deliver")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(WAIT)
    (headers, body), *more = receiver.got
    assert Webhook(secret).verify(body, headers)["data"]["plan"] == plan_id
    assert more == []  # two workers' loops, one message sent once
    assert json.loads(body)["type"] == "plan.in_review"


def test_the_http_mcp_server_sends_too(session, env, receivers, tmp_path):
    from tests.mcp_bridge.http_server import ServerProcess

    receiver = receivers()
    secret = subscribe(receiver.url, events="plan.in_review")
    server = ServerProcess(env, tmp_path / "logs")
    try:
        server.wait_listening()
        plan_id = submit_a_plan(session)
        receiver.wait_for(1)
        wait_until(lambda: WebhookDelivery.objects.get().status == "delivered", "the MCP server to deliver")
    finally:
        server.stop()
    (headers, body), *more = receiver.got
    assert Webhook(secret).verify(body, headers)["data"]["plan"] == plan_id and more == []


def test_loops_running_together_send_each_message_once(session, env, receivers):
    receiver = receivers()
    subscribe(receiver.url, events="plan.in_review")
    for _ in range(30):
        submit_a_plan(session)
    assert WebhookDelivery.objects.count() == 30
    together = [
        subprocess.Popen(
            [PYTHON, MANAGE, "nineplan_webhooks", "--once"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    for process in together:
        assert process.wait(WAIT) == 0, process.stderr.read()
    assert sorted(receiver.ids()) == sorted(f"msg_{d.id}" for d in WebhookDelivery.objects.all())
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("delivered", 1)}


def test_a_trickling_receiver_holds_up_no_other_and_gets_its_message_once(session, env, receivers, trickler):
    """Two delivery loops; one receiver answers a byte at a time for far longer than the
    attempt's deadline, the other at once. The fast one's message arrives while the slow one
    is still trickling; the slow attempt is cut at its deadline; the claim outlasts the
    attempt, so neither loop sends the slow message a second time meanwhile."""
    env = {
        **env,
        "NINEPLAN_WEBHOOKS_TIMEOUT": "10",
        "NINEPLAN_WEBHOOKS_CLAIM_SECONDS": "15",
        "NINEPLAN_WEBHOOKS_RETRY_DELAYS": "3600",
    }
    fast = receivers()
    subscribe(trickler.url, events="plan.in_review")  # the older subscription: its message comes first
    subscribe(fast.url, events="plan.in_review")
    submit_a_plan(session)
    loops = [loop(env), loop(env)]
    try:
        assert trickler.trickling.wait(WAIT)
        fast.wait_for(1)
        assert not trickler.cut.is_set(), "the fast message waited for the slow attempt to end"
        wait_until(
            lambda: WebhookDelivery.objects.filter(subscription__url=fast.url, status="delivered").exists(),
            "the fast message to be recorded",
        )
        assert WebhookDelivery.objects.get(subscription__url=trickler.url).attempts == 0  # still in flight
        wait_until(
            lambda: WebhookDelivery.objects.get(subscription__url=trickler.url).attempts == 1,
            "the slow attempt to end",
        )
        assert trickler.cut.wait(WAIT)
    finally:
        for process in loops:
            stop(process)
    slow = WebhookDelivery.objects.get(subscription__url=trickler.url)
    assert (slow.status, slow.last_response_code) == ("pending", None)
    assert slow.last_error.startswith("no answer by the attempt's deadline (")
    assert "NINEPLAN_WEBHOOKS_TIMEOUT=10); it was cut" in slow.last_error
    assert len(trickler.requests) == 1 and len(fast.got) == 1
