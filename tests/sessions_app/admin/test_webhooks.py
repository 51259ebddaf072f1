"""The admin's webhook pages: subscriptions and their deliveries, shown to superusers and
the project's managers only, never the secret, and a resend that goes through the service;
and on a project's page, its managers subscribe a URL (the secret shown once), rotate a
secret and remove a subscription, while its readers and other projects' managers cannot."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Event, Project, WebhookDelivery, WebhookSubscription
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


# --- on a project's page -----------------------------------------------------------------------

PAGE = reverse("admin:sessions_app_project_change", args=["default"])
SUBSCRIBE = reverse("admin:sessions_app_project_webhook_subscribe", args=["default"])


def rotate_url(sub_id: int, project: str = "default") -> str:
    return reverse("admin:sessions_app_project_webhook_rotate", args=[project, sub_id])


def remove_url(sub_id: int, project: str = "default") -> str:
    return reverse("admin:sessions_app_project_webhook_remove", args=[project, sub_id])


@pytest.fixture
def reader(db, settings):
    """Rhea, who may read the default project and nothing more."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("rhea", password="x", is_staff=True)
    services.project_grant(project="default", username="rhea", role="reader")
    return get_user_model().objects.get(pk=user.pk)


def subscriptions() -> list[tuple]:
    return list(WebhookSubscription.objects.order_by("id").values_list("project_id", "url", "event_types", "secret"))


def test_a_manager_subscribes_from_the_projects_page_and_sees_the_secret_once(staff, settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    client = client_for(staff)
    page = text_of(client.get(PAGE))
    assert 'id="np-webhook-subscribe"' in page and "No webhook yet." in page
    assert "plan.in_review" in page and "NINEPLAN_PUBLIC_URL" in page

    answer = client.post(SUBSCRIBE, {"url": "http://127.0.0.1:9/in", "events": ["plan.in_review", "plan.held"]})

    sub = WebhookSubscription.objects.get()
    assert answer.status_code == 200 and "no-store" in answer["Cache-Control"]
    shown = text_of(answer)
    assert f'<code id="np-secret">{sub.secret}</code>' in shown
    assert f"Subscribed http://127.0.0.1:9/in to plan.in_review, plan.held (id {sub.id})." in shown
    assert (sub.project_id, sub.created_by, sub.type_list()) == ("default", "user:sam", ["plan.in_review", "plan.held"])
    # Listed on the page from then on, never with its secret.
    page = text_of(client.get(PAGE))
    assert f'id="np-webhook-{sub.id}"' in page and "http://127.0.0.1:9/in" in page and sub.secret not in page


def test_a_refused_subscription_is_said_on_the_page_and_writes_nothing(staff, settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    client = client_for(staff)
    answer = client.post(SUBSCRIBE, {"url": "http://127.0.0.1:9/in", "events": ["all"]}, follow=True)
    assert "Project default: VALIDATION_ERROR: url: it resolves to 127.0.0.1, a loopback address" in text_of(answer)
    answer = client.post(SUBSCRIBE, {"url": "https://hooks.example.com/\x07", "events": ["all"]}, follow=True)
    assert "url: it holds a control character or whitespace" in text_of(answer)
    answer = client.post(SUBSCRIBE, {"url": "https://hooks.example.com/", "events": []}, follow=True)
    assert "events: name at least one event type" in text_of(answer)
    assert subscriptions() == []


def test_a_manager_rotates_and_removes_from_the_projects_page(staff, settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    made = services.webhook_subscribe(project="default", url="http://127.0.0.1:9/in", events="all", actor="x")
    sub_id = made.subscription.id
    client = client_for(staff)

    answer = client.post(rotate_url(sub_id), {"overlap_hours": "3"})

    row = WebhookSubscription.objects.get()
    assert answer.status_code == 200 and row.secret != made.secret and row.previous_secret == made.secret
    assert f'<code id="np-secret">{row.secret}</code>' in text_of(answer)
    assert "the old one signs beside it until" in text_of(answer)
    assert "previous secret signs too until" in text_of(client.get(PAGE))
    one = text_of(client.get(reverse("admin:sessions_app_webhooksubscription_change", args=[sub_id])))
    assert "Previous secret signs until" in one and row.secret not in one and made.secret not in one
    answer = client.post(rotate_url(sub_id), {"overlap_hours": "a week"}, follow=True)
    assert "overlap_hours: give a whole number of hours" in text_of(answer)
    assert WebhookSubscription.objects.get().secret == row.secret

    answer = client.post(remove_url(sub_id), follow=True)
    assert f"Removed webhook subscription {sub_id} (http://127.0.0.1:9/in) and its deliveries." in text_of(answer)
    assert subscriptions() == []


def test_a_reader_or_a_manager_of_another_project_is_refused_and_nothing_changes(staff, reader, outsider, settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    Project.objects.create(name="beta")
    beta = services.webhook_subscribe(project="beta", url="http://127.0.0.1:9/b", events="all", actor="x")
    mine = services.webhook_subscribe(project="default", url="http://127.0.0.1:9/a", events="all", actor="x")
    before = subscriptions()
    as_reader = client_for(reader)
    assert 'id="np-webhook-subscribe"' not in text_of(as_reader.get(PAGE))
    for url, data in (
        (SUBSCRIBE, {"url": "http://127.0.0.1:9/r", "events": ["all"]}),
        (rotate_url(mine.subscription.id), {}),
        (remove_url(mine.subscription.id), {}),
    ):
        assert as_reader.post(url, data).status_code == 403
        assert client_for(outsider).post(url, data).status_code == 403
    # The default project's manager reaches beta's subscription neither through beta's
    # page (not found) nor through its own.
    as_staff = client_for(staff)
    assert as_staff.post(rotate_url(beta.subscription.id, "beta")).status_code == 404
    answer = as_staff.post(rotate_url(beta.subscription.id), follow=True)
    assert f"no webhook subscription {beta.subscription.id}" in text_of(answer)
    answer = as_staff.post(remove_url(beta.subscription.id), follow=True)
    assert f"no webhook subscription {beta.subscription.id}" in text_of(answer)
    assert as_staff.get(SUBSCRIBE).status_code == 405
    assert subscriptions() == before
