"""Webhooks in the admin: each subscription (project, URL, event types, whether active)
and the messages sent to it (status, attempts, the receiver's last answer, the next
attempt), with an action that sends one again; and, on a project's page, subscribing a URL,
rotating a subscription's secret and removing it (ProjectWebhooks). Only superusers and the
project's managers see them; each change is a service call (services/webhooks.py)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Count, Q
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html

from sessions_app import access, clock, services
from sessions_app.admin.model_admin import NineplanAdmin, plan_url, session_url
from sessions_app.admin.roles import actor_for, can_intervene
from sessions_app.errors import NineplanError
from sessions_app.models import WebhookDelivery, WebhookSubscription

RESENT = "{count} webhook deliveries will be sent again shortly."
NOT_RESENT = "Delivery {id}: {message}"
UNSUBSCRIBED = "Removed webhook subscription {id} ({url}) and its deliveries."
SECRET_PAGE = "admin/sessions_app/project/webhook_secret.html"


# --- on a project's page (admin/projects.py): each takes the POST, calls one service and
# says what it did, or raises the service's error for the page to show ------------------


def subscribe_posted(request, name: str) -> tuple[str, str]:
    """What the subscription made from the form says, and its secret (shown once)."""
    made = services.webhook_subscribe(
        project=name,
        url=request.POST.get("url", ""),
        events=request.POST.getlist("events"),
        actor=actor_for(request.user),
    )
    sub = made.subscription
    return f"Subscribed {sub.url} to {', '.join(sub.type_list())} (id {sub.id}).", made.secret


def rotate_posted(request, name: str, subscription_id: int) -> tuple[str, str]:
    """What the rotation says, and the new secret (shown once)."""
    hours = request.POST.get("overlap_hours", str(services.DEFAULT_OVERLAP_HOURS)).strip()
    rotated = services.webhook_secret_rotate(
        subscription_id=subscription_id,
        overlap_hours=int(hours) if hours.isdigit() else hours,
        actor=actor_for(request.user),
        project=name,
    )
    until = (
        f"the old one signs beside it until {clock.utc_text(rotated.previous_until)}, then is dropped"
        if rotated.previous_until
        else "the old one no longer signs"
    )
    return (
        f"New secret for subscription {rotated.subscription.id} ({rotated.subscription.url}): {until}.",
        rotated.secret,
    )


def unsubscribe_posted(name: str, subscription_id: int) -> list[str]:
    removed = services.webhook_unsubscribe(subscription_id=subscription_id, project=name)
    return [UNSUBSCRIBED.format(id=removed.id, url=removed.url)]


def secret_page(request, context: dict) -> TemplateResponse:
    response = TemplateResponse(request, SECRET_PAGE, context)
    # Shown this once: never kept by a browser's or a proxy's cache.
    add_never_cache_headers(response)
    return response


class ManagersOnly(NineplanAdmin):
    """Shown to the managers of the subscription's project (and superusers) only: a URL and
    what is sent to it are the project's managers' business, not its readers'."""

    def get_queryset(self, request):
        # Narrowed to the projects the user sees, then to those it manages.
        projects = access.projects_where(access.MANAGE)
        qs = super().get_queryset(request)
        return qs if projects is None else qs.filter(**{f"{self.project_field}__in": projects})

    def has_module_permission(self, request):
        return can_intervene(request.user)

    def has_view_permission(self, request, obj=None):
        return can_intervene(request.user, None if obj is None else self.project_of(obj))

    def project_of(self, obj) -> str:
        raise NotImplementedError


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(ManagersOnly):
    project_field = "project_id"
    list_display = ("id", "project", "url", "events", "active", "pending", "failed", "deliveries_link", "created_at")
    list_filter = ("active",)
    search_fields = ("url",)
    ordering = ("project", "id")
    # The secret is shown once, when made (subscribing or rotating), never again.
    fields = (
        "project",
        "url",
        "events",
        "active",
        "previous_secret_until",
        "created_by",
        "created_at",
        "deliveries_link",
    )
    readonly_fields = fields

    def project_of(self, obj) -> str:
        return obj.project_id

    def get_queryset(self, request):
        by_status = {
            status: Count("deliveries", filter=Q(deliveries__status=status))
            for status in (WebhookDelivery.Status.PENDING, WebhookDelivery.Status.FAILED)
        }
        return super().get_queryset(request).annotate(**by_status)

    @admin.display(description="event types")
    def events(self, obj):
        return ", ".join(obj.type_list())

    @admin.display(description="pending")
    def pending(self, obj):
        return getattr(obj, "pending", None)

    @admin.display(description="failed")
    def failed(self, obj):
        return getattr(obj, "failed", None)

    @admin.display(description="deliveries")
    def deliveries_link(self, obj):
        url = reverse("admin:sessions_app_webhookdelivery_changelist") + f"?subscription__id__exact={obj.id}"
        return format_html('<a href="{}">deliveries</a>', url)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ManagersOnly):
    project_field = "subscription__project_id"
    list_display = (
        "webhook_id",
        "subscription_link",
        "event_type",
        "event_link",
        "status",
        "attempts",
        "last_response_code",
        "next_attempt_at",
        "delivered_at",
        "last_error",
    )
    list_filter = ("status", "event_type")
    list_select_related = ("subscription", "event")
    ordering = ("-id",)
    list_per_page = 100
    actions = ("resend",)
    fields = (
        "subscription",
        "event",
        "event_type",
        "status",
        "attempts",
        "last_response_code",
        "last_error",
        "next_attempt_at",
        "created_at",
        "delivered_at",
    )
    readonly_fields = fields

    def project_of(self, obj) -> str:
        return obj.subscription.project_id

    @admin.display(description="webhook-id", ordering="id")
    def webhook_id(self, obj):
        return f"msg_{obj.id}"

    @admin.display(description="subscription", ordering="subscription")
    def subscription_link(self, obj):
        url = reverse("admin:sessions_app_webhooksubscription_change", args=[obj.subscription_id])
        return format_html('<a href="{}">{} {}</a>', url, obj.subscription_id, obj.subscription.url)

    @admin.display(description="event")
    def event_link(self, obj):
        event = obj.event
        if event.plan_id:
            return format_html('{} <a href="{}">{}</a>', event.kind, plan_url(event.plan_id), event.plan_id)
        return format_html('{} <a href="{}">{}</a>', event.kind, session_url(event.session_id), event.session_id)

    @admin.action(description="Send the selected deliveries again", permissions=["intervene"])
    def resend(self, request, queryset):
        resent = 0
        for delivery_id in queryset.values_list("id", flat=True):
            try:
                services.delivery_resend(delivery_id=delivery_id, actor=actor_for(request.user))
            except NineplanError as exc:
                self.message_user(request, NOT_RESENT.format(id=delivery_id, message=exc.message), messages.ERROR)
            else:
                resent += 1
        if resent:
            self.message_user(request, RESENT.format(count=resent), messages.SUCCESS)
