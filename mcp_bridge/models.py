from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class McpToken(models.Model):
    """A bearer token for the MCP HTTP transport. Only its SHA-256 digest is stored: the
    token itself is shown once, when it is created, and cannot be recovered."""

    name = models.CharField(max_length=100)
    # Whose rights the token carries: its user's roles, narrowed to ``projects`` when any
    # are named. A token made before tokens belonged to users has none, and works with the
    # agent role in the default project only.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="nineplan_mcp_tokens"
    )
    projects = models.ManyToManyField("sessions_app.Project", blank=True, related_name="mcp_tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name", "-created_at"]
        verbose_name = "MCP token"
        constraints = [
            # A revoked token keeps its row (and name) for the record; a new token may
            # take the name again.
            models.UniqueConstraint(fields=["name"], condition=Q(revoked=False), name="mcp_token_active_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({'revoked' if self.revoked else 'active'})"
