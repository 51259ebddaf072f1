"""People sign in through their company's OpenID Connect provider: a real provider process
(the oidc-provider package from npm, pinned in tests/proofs/oidc_provider/package.json and
installed there by this test) and a real `manage.py serve`. A first sign-in gets the roles
the person's groups map to, or none; password logins can be off; an answer that does not
match the sign-in (its state, or its ID token's nonce) is refused."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from html import unescape
from pathlib import Path
from urllib.parse import urljoin

import httpx2
import pytest
from django.contrib.auth import get_user_model

from sessions_app.models import Membership, Project
from tests.conftest import MANAGE, PYTHON
from tests.mcp_bridge.http_server import free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PROVIDER = Path(__file__).parent / "oidc_provider"
CLIENT_ID, CLIENT_SECRET = "9plan-admin", "a-test-client-secret-of-some-length"
START_TIMEOUT = 60


def wait_port(port: int, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("node is needed for the sign-on proof (.ci/run installs it)")
        pytest.skip("node is not installed")
    if not (PROVIDER / "node_modules" / "oidc-provider").is_dir():
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--no-save"], cwd=PROVIDER, check=True, timeout=600
        )
    return found


@pytest.fixture
def sso(node, subprocess_env, tmp_path, db):
    for name in ("alpha", "beta"):
        Project.objects.create(name=name)
    get_user_model().objects.create_user("pat", password="a-long-password-1", is_staff=True)
    op_port, web_port = free_port(), free_port()
    web = f"http://127.0.0.1:{web_port}"
    started = []
    op_log, web_log = tmp_path / "op.log", tmp_path / "web.log"
    with op_log.open("w") as out:
        op = subprocess.Popen(
            [node, "op.mjs", str(op_port), CLIENT_ID, CLIENT_SECRET, web + "/oidc/callback/"],
            cwd=PROVIDER,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    started.append(op)
    env = {
        **subprocess_env,
        "NINEPLAN_OIDC_ISSUER": f"http://127.0.0.1:{op_port}",
        "NINEPLAN_OIDC_CLIENT_ID": CLIENT_ID,
        "NINEPLAN_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "NINEPLAN_OIDC_GROUP_ROLES": "devs=alpha:agent,leads=beta:manager,leads=alpha:reader",
        "NINEPLAN_PASSWORD_LOGIN": "false",
        "DJANGO_SECURE": "false",
    }
    with web_log.open("w") as out:
        server = subprocess.Popen(
            [PYTHON, MANAGE, "serve", "--port", str(web_port), "--workers", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    started.append(server)
    try:
        wait_port(op_port, op, op_log)
        wait_port(web_port, server, web_log)
        yield web
    finally:
        for proc in started:
            proc.terminate()
            proc.wait(timeout=30)


def forms(html: str) -> list[tuple[str, dict[str, str]]]:
    found = []
    for action, body in re.findall(r'<form[^>]*action="([^"]*)"[^>]*>(.*?)</form>', html, re.S):
        fields = {}
        for tag in re.findall(r"<input[^>]*>", body):
            name = re.search(r'name="([^"]+)"', tag)
            value = re.search(r'value="([^"]*)"', tag)
            if name:
                fields[name.group(1)] = unescape(value.group(1)) if value else ""
        found.append((unescape(action), fields))
    return found


def sign_in(web: str, login: str) -> httpx2.Client:
    """A browser that signs ``login`` in at the provider and comes back to 9plan."""
    browser = httpx2.Client(timeout=60, follow_redirects=True)
    page = browser.get(web + "/oidc/authenticate/?next=/admin/")
    for _ in range(4):  # the provider's sign-in page, then its consent page
        if str(page.url).startswith(web):
            break
        action, fields = forms(page.text)[0]
        if "login" in fields:
            fields.update(login=login, password="anything")
        page = browser.post(urljoin(str(page.url), action), data=fields)
    assert str(page.url).startswith(web + "/admin/"), (page.url, page.text[:1000])
    return browser


def test_a_first_sign_in_gets_the_mapped_roles(sso):
    browser = sign_in(sso, "lead")
    home = browser.get(sso + "/admin/")
    assert home.status_code == 200 and "lead" in home.text and str(home.url) == sso + "/admin/"
    user = get_user_model().objects.get(username="lead")
    roles = dict(Membership.objects.filter(user=user).values_list("project_id", "role"))
    # devs → alpha agent, leads → alpha reader and beta manager: the higher role in alpha.
    assert roles == {"alpha": "agent", "beta": "manager"}


def test_a_person_whose_groups_map_to_nothing_gets_no_role(sso):
    sign_in(sso, "nobody")
    user = get_user_model().objects.get(username="nobody")
    assert not Membership.objects.filter(user=user).exists()


def test_password_logins_are_off_and_a_foreign_state_is_refused(sso):
    with httpx2.Client(timeout=60) as browser:
        login = browser.get(sso + "/admin/login/")
        assert "Sign in with your company account" in login.text and 'name="password"' not in login.text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
        # The form is gone; a hand-made post is refused all the same.
        tried = browser.post(
            sso + "/admin/login/",
            data={
                "username": "pat",
                "password": "a-long-password-1",
                "csrfmiddlewaretoken": token.group(1) if token else "",
            },
        )
        assert tried.status_code in (200, 403)
        assert browser.get(sso + "/admin/").status_code == 302  # still not signed in
        users = get_user_model().objects.count()
        refused = browser.get(sso + "/oidc/callback/?code=made-up&state=not-this-sign-ins")
        assert refused.status_code == 302 and "sso=refused" in refused.headers["location"]
        assert browser.get(sso + "/admin/").status_code == 302
        assert get_user_model().objects.count() == users


def test_an_answer_carrying_another_sign_ins_nonce_is_refused(sso):
    # Two sign-ins begun in one browser: the provider's answer to the first, brought back
    # with the second's state, carries an ID token whose nonce is the first's. Refused, and
    # nobody is signed in or created.
    users = get_user_model().objects.count()
    with httpx2.Client(timeout=60, follow_redirects=False) as browser:
        first = browser.get(sso + "/oidc/authenticate/?next=/admin/").headers["location"]
        second = browser.get(sso + "/oidc/authenticate/?next=/admin/").headers["location"]
        states = [re.search(r"[?&]state=([^&]+)", url).group(1) for url in (first, second)]
        assert states[0] != states[1]
        # Through the provider's sign-in and consent pages, up to its answer for the first.
        page = browser.get(first)
        for _ in range(12):
            location = page.headers.get("location")
            if location is not None:
                target = urljoin(str(page.url), location)
                if target.startswith(sso):
                    break
                page = browser.get(target)
                continue
            action, fields = forms(page.text)[0]
            if "login" in fields:
                fields.update(login="lead", password="anything")
            page = browser.post(urljoin(str(page.url), action), data=fields)
        assert target.startswith(sso + "/oidc/callback/") and f"state={states[0]}" in target, target
        swapped = browser.get(target.replace(f"state={states[0]}", f"state={states[1]}"))
        assert swapped.status_code == 302 and "sso=refused" in swapped.headers["location"]
        assert browser.get(sso + "/admin/").status_code == 302  # not signed in
    assert get_user_model().objects.count() == users
