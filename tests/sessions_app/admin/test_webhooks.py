"""The admin's webhook pages: subscriptions and their deliveries, shown to superusers and
the project's managers only, never the secret, and a resend that goes through the service."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Event, Project, WebhookDelivery
from sessions_app.services import write_kit
from tests.conftest import plan_fields
from tests.sessions_app.admin_fixtures import (  # noqa: F401 (fixtures)
    client_for,
    outsider,
    reviewer,
    staff,
    superuser,
    text_of,
)

pytestmark = pytest.mark.django_db

SUBSCRIPTIONS = reverse("admin:sessions_app_webhooksubscription_changelist")
DELIVERIES = reverse("admin:sessions_app_webhookdelivery_changelist")


@pytest.fixture
def hooks(settings, session):
    """A subscription of the default project with one failed delivery, and one of project
    beta that default's managers must not see."""
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    settings.NINEPLAN_WEBHOOKS_RETRY_DELAYS = (5,)
    Project.objects.create(name="beta")
    mine = services.webhook_subscribe(
        project="default", url="http://127.0.0.1:9/mine", events="plan.held,lease.lost", actor="x"
    )
    theirs = services.webhook_subscribe(project="beta", url="http://127.0.0.1:9/theirs", events="all", actor="x")
    plan = services.plan_enqueue(session_name=session.name, **plan_fields()).plan
    from django.db import transaction

    with transaction.atomic():
        write_kit.record_event(session.name, Event.Kind.PLAN_HELD, "x", plan.id)
    delivery = WebhookDelivery.objects.get()
    WebhookDelivery.objects.filter(id=delivery.id).update(status="failed", attempts=2, last_response_code=502)
    return mine, theirs, delivery


def test_a_superuser_sees_every_subscription_without_its_secret(hooks, superuser):
    mine, theirs, delivery = hooks
    client = client_for(superuser)
    page = text_of(client.get(SUBSCRIPTIONS))
    assert "http://127.0.0.1:9/mine" in page and "http://127.0.0.1:9/theirs" in page
    assert "plan.held, lease.lost" in page and mine.secret not in page and theirs.secret not in page
    one = client.get(reverse("admin:sessions_app_webhooksubscription_change", args=[mine.subscription.id]))
    assert one.status_code == 200 and mine.secret not in text_of(one) and "whsec_" not in text_of(one)
    listed = text_of(client.get(DELIVERIES))
    assert f"msg_{delivery.id}" in listed and "502" in listed and "failed" in listed


def test_a_manager_sees_only_its_projects_webhooks(hooks, staff):
    mine, theirs, delivery = hooks
    client = client_for(staff)
    page = text_of(client.get(SUBSCRIPTIONS))
    assert "http://127.0.0.1:9/mine" in page and "http://127.0.0.1:9/theirs" not in page
    other = client.get(reverse("admin:sessions_app_webhooksubscription_change", args=[theirs.subscription.id]))
    assert other.status_code == 404
    filtered = text_of(client.get(DELIVERIES + f"?subscription__id__exact={mine.subscription.id}"))
    assert f"msg_{delivery.id}" in filtered


def test_the_resend_action_sends_it_again_through_the_service(hooks, staff):
    _, _, delivery = hooks
    response = client_for(staff).post(
        DELIVERIES, {"action": "resend", "_selected_action": [delivery.id], "index": 0}, follow=True
    )
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["1 webhook deliveries will be sent again shortly."]
    row = WebhookDelivery.objects.get()
    assert (row.id, row.status, row.attempts, row.claimed_until) == (delivery.id, "pending", 0, None)


@pytest.mark.parametrize("who", ["reviewer", "outsider"])
def test_readers_reviewers_and_outsiders_see_no_webhooks_and_resend_nothing(hooks, request, who):
    _, _, delivery = hooks
    client = client_for(request.getfixturevalue(who))
    assert client.get(SUBSCRIPTIONS).status_code == 403
    assert client.get(DELIVERIES).status_code == 403
    posted = client.post(DELIVERIES, {"action": "resend", "_selected_action": [delivery.id], "index": 0})
    assert posted.status_code == 403
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts) == ("failed", 2)
    assert "Webhook" not in text_of(client.get(reverse("admin:index")))


def test_the_webhook_lists_run_as_many_queries_for_many_rows_as_for_few(hooks, staff, session):
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    mine = hooks[0].subscription
    client = client_for(staff)

    def counts() -> tuple[int, int]:
        found = []
        for url in (SUBSCRIPTIONS, DELIVERIES):
            with CaptureQueriesContext(connection) as queries:
                assert client.get(url).status_code == 200
            found.append(len(queries))
        return tuple(found)

    few = counts()
    plan = services.plan_enqueue(session_name=session.name, **plan_fields(goal="more")).plan
    with transaction.atomic():
        for _ in range(30):
            write_kit.record_event(session.name, Event.Kind.PLAN_HELD, "x", plan.id)
    for n in range(5):
        services.webhook_subscribe(project="default", url=f"http://127.0.0.1:9/{n}", events="all", actor="x")
    assert WebhookDelivery.objects.filter(subscription=mine).count() == 31
    assert counts() == few
