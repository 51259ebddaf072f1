"""gunicorn's settings for `serve` (passed as ``--config python:sessions_app.management.serving``): its
server hooks, as module-level functions gunicorn looks up by name.

Each worker process starts the webhook delivery loop once it has loaded the app
(docs/design.md, "Webhooks"). A loop per worker rather than one in gunicorn's master: the
master forks workers again whenever one exits, and a fork while another thread holds a lock
(the loop's database connection, a logging handler) can leave the child stuck on it. The
loops' claims keep two of them from sending one message.
"""

from __future__ import annotations


def post_worker_init(worker) -> None:
    from sessions_app.webhooks import sender as webhook_sender

    webhook_sender.start()
