"""9plan: a session-scoped work queue for AI agents."""


def __getattr__(name: str):
    # Read on first use (sessions_app.version), not whenever a module of the package is imported.
    if name == "__version__":
        from sessions_app.version import version

        return version()
    raise AttributeError(f"module 'nineplan' has no attribute {name!r}")
