"""Where a webhook may be sent (sessions_app/webhooks/addresses.py): only an http or https URL
naming a host without credentials, and only to public unicast addresses unless
NINEPLAN_WEBHOOKS_ALLOW_PRIVATE is true."""

from __future__ import annotations

import pytest

from sessions_app import errors
from sessions_app.errors import ValidationFailed
from sessions_app.webhooks import addresses as webhook_urls


def test_a_url_is_split_into_its_scheme_host_port_and_path():
    assert webhook_urls.parse("HTTPS://hooks.example.com/in?x=1") == ("https", "hooks.example.com", 443, "/in?x=1")
    assert webhook_urls.parse("http://hooks.example.com:8080") == ("http", "hooks.example.com", 8080, "/")


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("", "give an http or https URL"),
        (None, "give an http or https URL"),
        ("http://a b/", "a control character or whitespace (' ' at position 9)"),
        ("https://hooks.example.com/in\x00", "a control character or whitespace ('\\x00' at position 29)"),
        ("https://hooks.example.com/\x1b[0m", "a control character or whitespace ('\\x1b' at position 27)"),
        ("https://hooks.example.com/a\tb", "a control character or whitespace ('\\t' at position 28)"),
        ("https://hooks.example.com/\u200bx", "a control character or whitespace ('\\u200b' at position 27)"),
        ("https://hooks.example.com/caf\u00e9", "not ASCII; percent-encode it"),
        ("http://x/" + "a" * 2000, "give an http or https URL"),
        ("ftp://hooks.example.com/", "the scheme 'ftp' is not accepted"),
        ("http://hooks.example.com:99999/", "its port is not a number"),
        ("http://user:secret@hooks.example.com/", "without a user name or password"),
        ("http:///path", "name a host"),
    ],
)
def test_a_bad_url_is_refused_naming_the_field(url, said):
    with pytest.raises(ValidationFailed) as refused:
        webhook_urls.parse(url)
    assert refused.value.field == "url" and said in refused.value.message


def test_a_host_that_resolves_to_loopback_is_refused_unless_private_addresses_are_allowed(settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(ValidationFailed) as refused:
        webhook_urls.resolve("http://127.0.0.1:8080/hook")
    assert refused.value.reason == errors.PRIVATE_ADDRESS and "a loopback address" in refused.value.message
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    assert webhook_urls.resolve("http://127.0.0.1:8080/hook") == webhook_urls.Target(
        "http", "127.0.0.1", 8080, "/hook", "127.0.0.1"
    )


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "100.64.0.1",
        "240.0.0.1",
    ],
)
def test_only_public_unicast_addresses_may_be_sent_to(settings, address):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    assert webhook_urls.refusal(address) is not None
    assert webhook_urls.refusal("93.184.215.14") is None and webhook_urls.refusal("2606:4700::1111") is None
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    assert webhook_urls.refusal(address) is None


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("2002:7f00:1::", "a 6to4 address carrying 127.0.0.1, a loopback address"),
        ("2002:a00:1::1", "a 6to4 address carrying 10.0.0.1, a private address"),
        ("2002:a9fe:a9fe::", "a 6to4 address carrying 169.254.169.254, a private address"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "a Teredo address carrying 127.0.0.1, a loopback address"),
        ("64:ff9b::7f00:1", "a NAT64 address carrying 127.0.0.1, a loopback address"),
        ("::ffff:192.168.0.1", "an IPv4-mapped address carrying 192.168.0.1, a private address"),
    ],
)
def test_the_ipv4_address_inside_an_ipv6_one_is_checked_like_any_other(settings, address, said):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    assert webhook_urls.refusal(address) == f"it resolves to {address}, {said}"
    # A 6to4 address carrying a public IPv4 one is public.
    assert webhook_urls.refusal("2002:5db8:d70e::1") is None


def test_a_url_naming_a_6to4_address_of_loopback_is_refused_when_resolved(settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(ValidationFailed) as refused:
        webhook_urls.resolve("http://[2002:7f00:1::]:8080/hook")
    assert refused.value.field == "url" and refused.value.reason == errors.PRIVATE_ADDRESS
    assert "a 6to4 address carrying 127.0.0.1, a loopback address" in refused.value.message
