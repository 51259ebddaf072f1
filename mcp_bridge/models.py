from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone


class McpToken(models.Model):
    """A bearer token for the MCP HTTP transport. Only its SHA-256 digest is stored: the
    token itself is shown once, when it is created, and cannot be recovered."""

    name = models.CharField(max_length=100)
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
