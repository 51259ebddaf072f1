"""Which URLs a webhook may be sent to (docs/design.md, "Webhooks").

Defends against server-side request forgery: whoever may subscribe a URL would otherwise
make the server post to addresses only it can reach (its own loopback, the private network
it sits in, a cloud's metadata address). A URL is checked when it is subscribed and again
before every attempt, on the addresses its name resolves to then (a name's addresses can
change), and the attempt connects to the address that was checked, never to a second
lookup's answer. Only http and https are accepted; redirects are never followed.
"""

from __future__ import annotations

import ipaddress
import socket
import unicodedata
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

from django.conf import settings

from sessions_app.errors import PRIVATE_ADDRESS, ValidationFailed

SCHEMES = {"http": 80, "https": 443}
MAX_URL_CHARS = 2000


@dataclass(frozen=True)
class Target:
    """Where an attempt goes: the URL's parts and the address it connects to."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


def parse(url: object) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of an acceptable URL, else VALIDATION_ERROR."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS:
        raise ValidationFailed(
            f"url: give an http or https URL of at most {MAX_URL_CHARS} characters.",
            field="url",
        )
    # Refused here rather than by the HTTP client at every attempt for a day: a URL with a
    # control character or a space can never be sent to.
    bad = next((i for i, c in enumerate(url) if c.isspace() or unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is not None:
        raise ValidationFailed(
            f"url: it holds a control character or whitespace ({url[bad]!r} at position {bad + 1}); "
            "percent-encode it or leave it out.",
            field="url",
        )
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ValidationFailed(
            f"url: the scheme '{parts.scheme}' is not accepted; use http or https.",
            field="url",
        )
    try:
        port = parts.port or SCHEMES[scheme]
    except ValueError:
        raise ValidationFailed("url: its port is not a number from 1 to 65535.", field="url") from None
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise ValidationFailed("url: name a host, without a user name or password.", field="url")
    path = parts.path or "/"
    if parts.query:
        path += f"?{parts.query}"
    if not path.isascii():
        raise ValidationFailed(
            "url: its path or query holds a character that is not ASCII; percent-encode it.", field="url"
        )
    return scheme, parts.hostname, port, path


def refusal(address: str) -> str | None:
    """Why ``address`` may not be sent to (None: it may): anything but a public unicast
    address, unless NINEPLAN_WEBHOOKS_ALLOW_PRIVATE is true."""
    if settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE:
        return None
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        # An IPv6 address that carries an IPv4 one reaches it: through the host's own
        # stack (mapped), a 6to4 relay or a Teredo relay (its client's address), or a NAT64
        # gateway. What it carries is checked as if it had been given.
        for how, inner in _carried(ip):
            why = refusal(str(inner))
            if why is not None:
                return f"it resolves to {address}, {how} carrying {why.removeprefix('it resolves to ')}"
    for what, hit in (
        ("a loopback", ip.is_loopback),
        ("a private", ip.is_private),
        ("a link-local", ip.is_link_local),
        ("an unspecified", ip.is_unspecified),
        ("a multicast", ip.is_multicast),
        ("a reserved", ip.is_reserved),
        ("a non-public", not ip.is_global),
    ):
        if hit:
            return f"it resolves to {address}, {what} address"
    return None


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _carried(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, each with the name of how."""
    found = []
    if ip.ipv4_mapped is not None:
        found.append(("an IPv4-mapped address", ip.ipv4_mapped))
    if ip.sixtofour is not None:
        found.append(("a 6to4 address", ip.sixtofour))
    if ip.teredo is not None:
        server, client = ip.teredo
        found += [("a Teredo address", client), ("a Teredo address", server)]
    if ip in NAT64:
        found.append(("a NAT64 address", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    return found


def resolve(url: object) -> Target:
    """The URL's target, once every address its host resolves to is allowed; otherwise
    VALIDATION_ERROR saying why (nothing is sent)."""
    scheme, host, port, path = parse(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ValidationFailed(f"url: the host '{host}' does not resolve ({exc}).", field="url") from None
    # An IP lookup's address is text; the stubs also allow the (int, bytes) form that a Python
    # built without IPv6 gives for an address family it does not know.
    addresses = list(dict.fromkeys(cast(str, info[4][0]) for info in infos))
    if not addresses:
        raise ValidationFailed(f"url: the host '{host}' does not resolve.", field="url")
    # Every address is checked, not only the one used: a name that also resolves to a
    # private address would reach it on another attempt.
    for address in addresses:
        why = refusal(address)
        if why is not None:
            raise ValidationFailed(
                f"url: {why}; such URLs are refused unless NINEPLAN_WEBHOOKS_ALLOW_PRIVATE=true.",
                field="url",
                reason=PRIVATE_ADDRESS,
            )
    return Target(scheme, host, port, path, addresses[0])
