"""9plan: a session-scoped work queue for AI agents."""

__version__ = "0.2.0"
