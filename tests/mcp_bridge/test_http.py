"""The HTTP transport's settings (mcp_bridge/http.py), in-process (the served app is
exercised through real server processes in tests/proofs/test_http_server.py). The tokens
and the token check are in test_auth.py."""

from __future__ import annotations

import socket

import pytest
from django.core.exceptions import ImproperlyConfigured

from mcp_bridge import http


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_binds_need_no_token_by_default(settings, host):
    config = http.load_config(host=host, port=8123)
    assert http.is_loopback(config.host)
    assert config.require_token is False
    assert "127.0.0.1:*" in config.allowed_hosts and "localhost:*" in config.allowed_hosts


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "agents.example.com"])
def test_any_other_bind_requires_a_token(host):
    assert http.load_config(host=host, port=8123).require_token is True


def test_loopback_can_require_a_token(settings):
    settings.NINEPLAN_HTTP_REQUIRE_TOKEN = True
    assert http.load_config(host="127.0.0.1", port=8123).require_token is True


def test_the_environment_gives_the_defaults(settings):
    settings.NINEPLAN_HTTP_HOST = "192.0.2.7"
    settings.NINEPLAN_HTTP_PORT = 9001
    config = http.load_config()
    assert (config.host, config.port, config.url) == ("192.0.2.7", 9001, "http://192.0.2.7:9001/mcp")
    # Options win over the environment.
    assert http.load_config(host="127.0.0.1", port=9002).url == "http://127.0.0.1:9002/mcp"


@pytest.mark.parametrize(
    "kwargs,source",
    [
        ({"host": "http://0.0.0.0"}, "--host"),
        ({"host": "127.0.0.1:8080"}, "--host"),
        ({"host": ""}, "--host"),
        ({"host": "bad host"}, "--host"),
        ({"host": "a/b"}, "--host"),
        ({"port": 0}, "--port"),
        ({"port": 70000}, "--port"),
        ({"port": -1}, "--port"),
    ],
)
def test_bad_options_are_refused_naming_the_option(kwargs, source):
    with pytest.raises(ImproperlyConfigured) as info:
        http.load_config(**{"host": "127.0.0.1", "port": 8123, **kwargs})
    assert str(info.value).startswith(f"{source}=")


def test_a_bad_host_variable_is_refused_naming_the_variable(settings):
    settings.NINEPLAN_HTTP_HOST = "https://example.com/mcp"
    with pytest.raises(ImproperlyConfigured, match=r"^NINEPLAN_HTTP_HOST='https://example.com/mcp' is not accepted"):
        http.load_config()


@pytest.mark.parametrize(
    "variable,value",
    [
        ("NINEPLAN_HTTP_ALLOWED_ORIGINS", ["example.com"]),
        ("NINEPLAN_HTTP_ALLOWED_ORIGINS", ["https://example.com/path"]),
        ("NINEPLAN_HTTP_ALLOWED_HOSTS", ["exa mple.com"]),
        ("NINEPLAN_HTTP_ALLOWED_HOSTS", ["https://example.com"]),
    ],
)
def test_bad_allowed_lists_are_refused_naming_the_variable(settings, variable, value):
    setattr(settings, variable, value)
    with pytest.raises(ImproperlyConfigured, match=f"^{variable} has"):
        http.load_config(host="127.0.0.1", port=8123)


@pytest.mark.slow
def test_the_settings_module_refuses_a_bad_port_variable(subprocess_env):
    import subprocess

    from tests.conftest import MANAGE, PYTHON, REPO

    env = {**subprocess_env, "NINEPLAN_HTTP_PORT": "80x"}
    done = subprocess.run(
        [PYTHON, MANAGE, "mcp", "--transport", "http"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "NINEPLAN_HTTP_PORT='80x' is not accepted" in done.stderr
    assert done.stdout == ""


def test_allowed_hosts_follow_the_bind_address(settings):
    named = http.load_config(host="192.0.2.10", port=8123).allowed_hosts
    assert "192.0.2.10:*" in named and "192.0.2.10" in named
    everywhere = http.load_config(host="0.0.0.0", port=8123).allowed_hosts
    assert f"{socket.gethostname()}:*" in everywhere
    assert "0.0.0.0:*" not in everywhere  # nobody reaches a server by the wildcard address
    v6 = http.load_config(host="2001:db8::1", port=8123).allowed_hosts
    assert "[2001:db8::1]:*" in v6


def test_extra_hosts_and_origins_are_added(settings):
    settings.NINEPLAN_HTTP_ALLOWED_HOSTS = ["9plan.example.com", "proxy.example.com:8443"]
    settings.NINEPLAN_HTTP_ALLOWED_ORIGINS = ["https://tools.example.com"]
    config = http.load_config(host="127.0.0.1", port=8123)
    assert {"9plan.example.com", "9plan.example.com:*", "proxy.example.com:8443"} <= set(config.allowed_hosts)
    assert "proxy.example.com:8443:*" not in config.allowed_hosts
    origins = set(config.allowed_origins)
    assert {"https://9plan.example.com", "https://tools.example.com", "http://localhost:*"} <= origins
    security = http.transport_security(config)
    assert security.enable_dns_rebinding_protection is True
    assert security.allowed_hosts == list(config.allowed_hosts)
    # Clients reaching a loopback server by a public name come through a proxy: token.
    assert config.require_token is True


def test_extra_loopback_names_do_not_require_a_token(settings):
    settings.NINEPLAN_HTTP_ALLOWED_HOSTS = ["127.0.0.1:8443", "localhost", "[::1]:*"]
    assert http.load_config(host="127.0.0.1", port=8123).require_token is False


def test_a_star_leaves_host_checks_to_a_proxy_but_keeps_the_token(settings):
    settings.NINEPLAN_HTTP_ALLOWED_HOSTS = ["*"]
    config = http.load_config(host="0.0.0.0", port=8123)
    assert config.allowed_hosts == ()
    assert http.transport_security(config).enable_dns_rebinding_protection is False
    assert config.require_token is True


def test_stateless_serving_is_a_setting(settings):
    assert http.load_config(host="127.0.0.1", port=8123).stateless is False
    settings.NINEPLAN_HTTP_STATELESS = True
    assert http.load_config(host="127.0.0.1", port=8123).stateless is True
