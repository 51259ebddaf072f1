"""MCP over streamable HTTP at /mcp: settings, the ASGI app, and serving it with uvicorn.

Two defences stand in front of the tools:
- DNS rebinding: a web page the operator visits could make their browser send requests
  to a server bound on their machine, under a host name the attacker controls. The SDK's
  transport security refuses any Host (421) or Origin (403) header that is not one of the
  names this server is reached by: the loopback names, the bind address and, on a wildcard
  bind, the machine's own names, plus NINEPLAN_HTTP_ALLOWED_HOSTS / _ORIGINS.
- Bearer tokens (mcp_bridge.auth): required whenever the server listens on anything but
  loopback or is reached by other names (NINEPLAN_HTTP_ALLOWED_HOSTS: a reverse proxy makes
  it as exposed as the proxy), and on loopback with NINEPLAN_HTTP_REQUIRE_TOKEN=true. A
  token that is sent is checked everywhere, required or not: a wrong one gets 401.

Several server processes may serve one database: every tool call takes its session from
the `session_name` argument (or the MCP session's current one), never from the process.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

log = logging.getLogger("nineplan.mcp")

MCP_PATH = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("0.0.0.0", "::")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME_RE = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*\.?")


@dataclass(frozen=True)
class HttpConfig:
    host: str
    port: int
    require_token: bool
    allowed_hosts: tuple[str, ...]  # empty: Host and Origin are not checked
    allowed_origins: tuple[str, ...]
    stateless: bool = False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{MCP_PATH}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name may resolve anywhere: treat it as exposed


def check_host(host: object, source: str) -> str:
    """``host`` if it is an IP address or host name to bind to, else a clear error."""
    if isinstance(host, str):
        bare = host.strip()
        if bare.startswith("[") and bare.endswith("]"):
            bare = bare[1:-1]
        try:
            return str(ipaddress.ip_address(bare))
        except ValueError:
            if HOSTNAME_RE.fullmatch(bare):
                return bare
    raise ImproperlyConfigured(
        f"{source}={host!r} is not accepted; use an IP address or host name to listen on, such as 127.0.0.1 "
        "(this machine only, the default) or 0.0.0.0 (every interface; clients then need a token). "
        "No scheme, port or path."
    )


def check_port(port: object, source: str) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ImproperlyConfigured(f"{source}={port!r} is not accepted; use a whole number from 1 to 65535.")
    return port


def _with_ports(host: str) -> list[str]:
    # A Host header carries a port unless it is the scheme's default; allow both.
    return [host] if host.endswith(":*") or re.search(r":\d+$|\]:\d+$", host) else [host, f"{host}:*"]


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_names(host: str, extra_hosts: list[str]) -> list[str]:
    """The Host header values this server answers to (each also with any port)."""
    names = list(LOOPBACK_NAMES)
    if host in WILDCARDS:
        # Listening everywhere: the machine's own names and addresses are how it is reached.
        own = {socket.gethostname(), socket.getfqdn()}
        for name in list(own):
            try:
                own |= {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
            except OSError:
                pass
        names += sorted(_bracketed(n) for n in own if n)
    elif host != "localhost":
        names.append(_bracketed(host))
    names += [h.strip().lower() for h in extra_hosts]
    out: list[str] = []
    for name in names:
        for value in _with_ports(name):
            if value not in out:
                out.append(value)
    return out


def reached_from_elsewhere(extra_hosts: list[str]) -> bool:
    """Whether extra allowed host names say clients arrive from other machines: a server
    on loopback behind a reverse proxy is as exposed as the proxy, so it needs tokens too."""
    for name in extra_hosts:
        bare = re.sub(r":(\d+|\*)$", "", name.strip()).strip("[]")
        if name.strip() == "*" or not is_loopback(bare):
            return True
    return False


def load_config(*, host: str | None = None, port: int | None = None) -> HttpConfig:
    """The HTTP settings: command-line options over NINEPLAN_HTTP_* variables, checked."""
    if host is None:
        host = check_host(settings.NINEPLAN_HTTP_HOST, "NINEPLAN_HTTP_HOST")
    else:
        host = check_host(host, "--host")
    if port is None:
        port = check_port(settings.NINEPLAN_HTTP_PORT, "NINEPLAN_HTTP_PORT")
    else:
        port = check_port(port, "--port")
    extra_hosts = list(settings.NINEPLAN_HTTP_ALLOWED_HOSTS)
    extra_origins = list(settings.NINEPLAN_HTTP_ALLOWED_ORIGINS)
    for origin in extra_origins:
        if origin != "*" and not re.fullmatch(r"https?://[^/\s]+", origin):
            raise ImproperlyConfigured(
                f"NINEPLAN_HTTP_ALLOWED_ORIGINS has {origin!r}; use origins like https://agents.example.com "
                "(scheme and host, optional port or :*, no path), separated by commas."
            )
    for name in extra_hosts:
        if name != "*" and not re.fullmatch(r"[A-Za-z0-9.\-\[\]:]+(:\*)?", name.strip()):
            raise ImproperlyConfigured(
                f"NINEPLAN_HTTP_ALLOWED_HOSTS has {name!r}; use host names as clients write them in the URL "
                "(e.g. 9plan.example.com or 9plan.example.com:8443), separated by commas, or * to skip the check."
            )
    require = settings.NINEPLAN_HTTP_REQUIRE_TOKEN or not is_loopback(host) or reached_from_elsewhere(extra_hosts)
    stateless = settings.NINEPLAN_HTTP_STATELESS
    if "*" in extra_hosts:
        # Someone else (a reverse proxy) checks Host; the token still guards the tools.
        return HttpConfig(host, port, require, (), (), stateless)
    hosts = allowed_names(host, [h for h in extra_hosts if h != "*"])
    origins = []
    for name in hosts:
        for scheme in ("http", "https"):
            origins.append(f"{scheme}://{name}")
    origins += [o.rstrip("/") for o in extra_origins]
    return HttpConfig(host, port, require, tuple(hosts), tuple(dict.fromkeys(origins)), stateless)


def transport_security(config: HttpConfig):
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(
        enable_dns_rebinding_protection=bool(config.allowed_hosts),
        allowed_hosts=list(config.allowed_hosts),
        allowed_origins=list(config.allowed_origins),
    )


def build_app(server, config: HttpConfig):
    """The ASGI app: the SDK's streamable HTTP app at /mcp, behind the token check."""
    from mcp_bridge.auth import BearerTokenMiddleware

    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=transport_security(config),
        host=config.host,
        stateless_http=config.stateless,
    )
    from mcp_bridge import oauth

    if oauth.enabled():
        # The SDK's resource server checks every request (mcp_bridge.oauth), static tokens too.
        return app
    return BearerTokenMiddleware(app, required=config.require_token)


def serve(server, config: HttpConfig) -> None:
    import anyio
    import uvicorn

    app = build_app(server, config)
    # log_config=None: uvicorn's own loggers go through 9plan's JSON logging on stderr
    # (its default would print access lines to stdout).
    uvicorn_config = uvicorn.Config(app, host=config.host, port=config.port, log_config=None, access_log=False)
    log.info(
        "9plan serving MCP over streamable HTTP",
        extra={
            "url": config.url,
            "token_required": config.require_token,
            "stateless": config.stateless,
            "allowed_hosts": list(config.allowed_hosts),
        },
    )
    anyio.run(uvicorn.Server(uvicorn_config).serve)


class RefusedToStart(Exception):
    """The server will not start as configured; the message says why and what to do."""


def start(server, *, host: str | None = None, port: int | None = None) -> None:
    """Check the settings and the database, then serve until stopped."""
    from mcp_bridge import auth, readiness
    from sessions_app.errors import DatabaseFailed

    config = load_config(host=host, port=port)
    try:
        # Unlike stdio, nothing waits on the first answer here, and the token check below
        # needs the migrated database.
        readiness.wait_ready()
    except DatabaseFailed as exc:
        raise RefusedToStart(exc.message) from exc
    from mcp_bridge import oauth

    if config.require_token and not oauth.enabled() and auth.active_token_count() == 0:
        if not is_loopback(config.host):
            why = f"it would listen on {config.host}, which is not a loopback address"
        elif settings.NINEPLAN_HTTP_REQUIRE_TOKEN:
            why = "NINEPLAN_HTTP_REQUIRE_TOKEN is true"
        else:
            why = "NINEPLAN_HTTP_ALLOWED_HOSTS lets clients reach it by other names (through a reverse proxy, say)"
        raise RefusedToStart(
            f"The MCP HTTP server needs a bearer token because {why}, and no active token exists. "
            "Create one with `manage.py nineplan_mcp_token create NAME` and give it to the clients, "
            "or listen on 127.0.0.1 only."
        )
    from django.db import close_old_connections

    close_old_connections()
    serve(server, config)
