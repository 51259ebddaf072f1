"""The reviewer admin: sessions, queues, plans, history, timelines and invariant checks.

Reviewers read; a few staff (``change_plan`` permission) may discard, move or requeue a
plan. Every such change is a call to a service with the staff user as the actor; the
generic add/change/delete forms are switched off for every model, so nothing edits a
plan's status, position or text behind the services' back.

Importing the package registers the ModelAdmins (sessions.py, plans.py, events.py, on
base.py's NineplanAdmin) and titles the site.
"""

from __future__ import annotations

from django.contrib import admin

from sessions_app.admin.base import NineplanAdmin
from sessions_app.admin.events import EventAdmin
from sessions_app.admin.plans import PlanAdmin
from sessions_app.admin.sessions import SessionAdmin

__all__ = ["EventAdmin", "NineplanAdmin", "PlanAdmin", "SessionAdmin"]

admin.site.site_header = "9plan review"
admin.site.site_title = "9plan"
admin.site.index_title = "Sessions, plans and history"
# The header's own links lead to every page; the app sidebar would only take the width
# the lists need on a laptop screen.
admin.site.enable_nav_sidebar = False
