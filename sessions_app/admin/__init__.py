"""The reviewer admin: sessions, queues, plans, history, timelines and invariant checks.

Each user sees the projects it is a member of: readers read; reviewers also approve and
reject; managers also discard, move, requeue, restore and release plans, set a session's
review policy, keep the project's members and see its webhook subscriptions and deliveries
(and send one again). Every such change is a call to a service with
the staff user as the actor; the generic add/change/delete forms are switched off for every
model, so nothing edits a plan's status, position or text behind the services' back.

Importing the package registers the ModelAdmins (projects.py, sessions.py, plans.py,
events.py, webhooks.py, on base.py's NineplanAdmin), titles the site and makes its home "Needs you"
(home.py; live.py answers the live pages' polls).
"""

from __future__ import annotations

from django.contrib import admin

from sessions_app.admin import home
from sessions_app.admin.connected_apps import ConnectedAppAdmin
from sessions_app.admin.events import EventAdmin
from sessions_app.admin.model_admin import NineplanAdmin
from sessions_app.admin.plans import PlanAdmin
from sessions_app.admin.projects import ProjectAdmin
from sessions_app.admin.sessions import SessionAdmin
from sessions_app.admin.webhooks import WebhookDeliveryAdmin, WebhookSubscriptionAdmin

__all__ = [
    "ConnectedAppAdmin",
    "EventAdmin",
    "NineplanAdmin",
    "PlanAdmin",
    "ProjectAdmin",
    "SessionAdmin",
    "WebhookDeliveryAdmin",
    "WebhookSubscriptionAdmin",
]

admin.site.site_header = "9plan review"
admin.site.site_title = "9plan"
admin.site.index_title = "Sessions, plans and history"
# The header's own links lead to every page; the app sidebar would only take the width
# the lists need on a laptop screen.
admin.site.enable_nav_sidebar = False
# The home says what needs a person; Django's list of apps is below it.
# Replaced on the default site itself, which keeps its class; the checker allows no method
# to be assigned on an instance.
admin.site.index = home.index_view(admin.site)  # type: ignore[method-assign]
