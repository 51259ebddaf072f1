"""gunicorn's server hooks for `serve` (sessions_app/management/serving.py): each worker starts the webhook
delivery loop once it has loaded the app, unless the interval turns the loop off."""

from __future__ import annotations

import threading

import pytest

from sessions_app.management import serving
from sessions_app.webhooks import sender as webhook_sender


@pytest.mark.django_db(transaction=True)
def test_a_worker_starts_the_delivery_loop_once(settings):
    settings.NINEPLAN_WEBHOOKS_INTERVAL = 1
    try:
        serving.post_worker_init(worker=None)
        thread = webhook_sender.start()
        assert thread is not None and thread.is_alive() and thread.name == "nineplan-webhooks"
        serving.post_worker_init(worker=None)
        assert webhook_sender.start() is thread
    finally:
        webhook_sender.stop()
    thread.join(10)
    assert not thread.is_alive()


def test_with_the_interval_0_a_worker_starts_no_loop(settings):
    settings.NINEPLAN_WEBHOOKS_INTERVAL = 0
    serving.post_worker_init(worker=None)
    assert webhook_sender.start() is None
    assert not [t for t in threading.enumerate() if t.name == "nineplan-webhooks" and t.is_alive()]
