"""Webhooks: the addresses a subscription may use, the event types it chooses from, and
the sender that delivers the outbox."""
