"""Every state change an agent, a reviewer or an integration can ask for. The MCP tools,
the admin and the REST API call these and write nothing themselves; this package's face is
the one surface they import. The other writers are maintenance: the import
(maintenance/export_import/) and the repair (maintenance/repair.py). Every service runs in
a write transaction of store/transactions.py (docs/design.md, "Services and queries").

One module per idea: ``write_kit`` (the write kit the others share), ``file_edits`` (taking
in an agent's plan-file edits), ``sessions``, ``queue`` (adding plans and their
dependencies, moving them), ``edits`` (a person's correction of an open plan's text or a
queued plan's place), ``claims`` (pulls, leases, reclaiming), ``worker_writes`` (note,
defer, complete, discard), ``staff`` (staff requeue and discard), ``review`` (the review gate
and restoring a revision), ``projects`` (projects and their members), ``webhooks``
(subscriptions, resending, the delivery loops' claims and attempts), ``consents`` (what a
person lets an OAuth client do, and taking it back) and ``retries`` (a write
sent again with its request_id is answered, not applied twice).
"""

from sessions_app.services.claims import RECLAIM_ACTOR, PullResult, plan_pull, plan_reclaim, plan_renew, reclaim_expired
from sessions_app.services.consents import (
    consent_check,
    consent_give,
    consent_revoke,
    consent_visible,
    consents_visible,
    tokens_sweep,
)
from sessions_app.services.edits import plan_edit
from sessions_app.services.projects import Granted, project_create, project_grant, project_revoke, roles_from_groups
from sessions_app.services.queue import MAX_DEPENDENCIES, PlanInput, plan_enqueue, plan_enqueue_many, plan_move
from sessions_app.services.retries import forget_old_requests, write_once
from sessions_app.services.review import DECISIONS, plan_release, plan_restore, plan_review
from sessions_app.services.sessions import project_for_new_session, session_create, session_set_review
from sessions_app.services.staff import plan_discard_any, plan_requeue
from sessions_app.services.webhooks import (
    DEFAULT_OVERLAP_HOURS,
    Rotated,
    Subscribed,
    deliveries_claim,
    delivery_record,
    delivery_resend,
    webhook_secret_rotate,
    webhook_subscribe,
    webhook_unsubscribe,
)
from sessions_app.services.worker_writes import plan_complete, plan_defer, plan_discard, plan_note
from sessions_app.services.write_kit import Written, compose_append, worker_actor

__all__ = [
    "DECISIONS",
    "DEFAULT_OVERLAP_HOURS",
    "MAX_DEPENDENCIES",
    "RECLAIM_ACTOR",
    "Granted",
    "PlanInput",
    "PullResult",
    "Rotated",
    "Subscribed",
    "Written",
    "compose_append",
    "consent_check",
    "consent_give",
    "consent_revoke",
    "consent_visible",
    "consents_visible",
    "deliveries_claim",
    "delivery_record",
    "delivery_resend",
    "forget_old_requests",
    "plan_complete",
    "plan_defer",
    "plan_discard",
    "plan_discard_any",
    "plan_edit",
    "plan_enqueue",
    "plan_enqueue_many",
    "plan_move",
    "plan_note",
    "plan_pull",
    "plan_reclaim",
    "plan_release",
    "plan_renew",
    "plan_requeue",
    "plan_restore",
    "plan_review",
    "project_create",
    "project_for_new_session",
    "project_grant",
    "project_revoke",
    "reclaim_expired",
    "roles_from_groups",
    "session_create",
    "session_set_review",
    "tokens_sweep",
    "webhook_secret_rotate",
    "webhook_subscribe",
    "webhook_unsubscribe",
    "worker_actor",
    "write_once",
]
