"""Strict readers for 9plan's environment variables.

Each helper either returns a valid value or raises ImproperlyConfigured naming the
variable and the values it accepts, so a typo fails at start-up instead of at 3 a.m.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str, environ: Mapping[str, str] = os.environ) -> str:
    return environ.get(name, default)


def env_choice(name: str, choices: tuple[str, ...], default: str, environ: Mapping[str, str] = os.environ) -> str:
    value = environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not accepted; use one of: {'|'.join(choices)} (default {default})."
        )
    return value


def env_pattern(name: str, pattern: str, default: str, what: str, environ: Mapping[str, str] = os.environ) -> str:
    """A value that must match ``pattern`` whole (``what`` says what that is, for the error)."""
    import re

    value = environ.get(name, default)
    if not re.fullmatch(pattern, value):
        raise ImproperlyConfigured(f"{name}={value!r} is not accepted; use {what} (default {default!r}).")
    return value


def env_int(
    name: str,
    default: int,
    *,
    minimum: int = 0,
    maximum: int | None = None,
    environ: Mapping[str, str] = os.environ,
) -> int:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    upper = "" if maximum is None else f" and at most {maximum}"
    if value is None or value < minimum or (maximum is not None and value > maximum):
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not accepted; use a whole number at least {minimum}{upper} (default {default})."
        )
    return value


def env_bool(name: str, default: bool, environ: Mapping[str, str] = os.environ) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not accepted; use true or false (also 1/0, yes/no, on/off).")


def env_seconds(name: str, default: tuple[int, ...], environ: Mapping[str, str] = os.environ) -> tuple[int, ...]:
    """A comma-separated list of whole numbers of seconds, at least one."""
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        values = tuple(int(item) for item in raw.split(","))
    except ValueError:
        values = ()
    if not values or any(v < 0 for v in values):
        shown = ",".join(str(v) for v in default)
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not accepted; use whole numbers of seconds separated by commas (default {shown})."
        )
    return values


def env_list(name: str, default: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    raw = environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_path(name: str, default: Path, environ: Mapping[str, str] = os.environ) -> Path:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    return path


def env_public_url(name: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The address people and other systems reach this server by (scheme, host, optional
    port and path prefix), without a trailing slash; None when unset."""
    from urllib.parse import urlsplit

    raw = environ.get(name, "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # not a number from 0 to 65535
        port_ok = False
    plain = not (parts.query or parts.fragment or parts.username or any(c.isspace() for c in raw))
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok or not plain:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not accepted; use the server's public address, such as "
            "https://9plan.example.com or https://example.com/9plan (http or https, no query)."
        )
    return raw.rstrip("/")


def default_data_dir() -> Path:
    # platformdirs gives the platform's user data directory (XDG on Linux,
    # ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows).
    from platformdirs import user_data_dir

    return Path(user_data_dir("9plan", appauthor=False))


def env_group_roles(
    name: str, roles: tuple[str, ...], environ: Mapping[str, str] = os.environ
) -> dict[str, list[tuple[str, str]]]:
    """GROUP=PROJECT:ROLE pairs separated by commas (a group may name several projects), as
    {group: [(project, role), ...]}; {} when unset."""
    import re

    mapped: dict[str, list[tuple[str, str]]] = {}
    for item in (environ.get(name) or "").split(","):
        if not item.strip():
            continue
        found = re.fullmatch(r"\s*([^=\s]+)\s*=\s*([a-z0-9][a-z0-9-]{0,62}):([a-z]+)\s*", item)
        if not found or found.group(3) not in roles:
            raise ImproperlyConfigured(
                f"{name} has {item.strip()!r}; use GROUP=PROJECT:ROLE pairs separated by commas, such as "
                f"devs=billing:agent,leads=billing:manager (roles: {'|'.join(roles)})."
            )
        mapped.setdefault(found.group(1), []).append((found.group(2), found.group(3)))
    return mapped
