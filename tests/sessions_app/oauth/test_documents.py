"""Client ID metadata documents: a client whose id is an https URL is described by the JSON
there, fetched under the webhooks' rules; every bad document is refused with nothing made."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from oauth2_provider.models import Application, Grant

from tests.sessions_app.oauth.flow import (
    REDIRECT,
    authorize_query,
    code_of,
    consent,
    oauth_on,  # noqa: F401 (fixture)
    pkce,
)
from tests.sessions_app.oauth.test_views import alice  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def self_signed(folder) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


@pytest.fixture
def documents(tmp_path, monkeypatch, settings):
    """An https server on loopback serving client documents, trusted by this process."""
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", cert)
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    served: dict[str, tuple[str, bytes]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            kind, body = served.get(self.path, ("text/plain", b"missing"))
            self.send_response(200 if self.path in served else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"https://localhost:{server.server_port}"

    def serve(path: str, document=None, *, kind: str = "application/json", raw: bytes | None = None) -> str:
        url = base + path
        if raw is None:
            raw = json.dumps(
                document
                if document is not None
                else {
                    "client_id": url,
                    "client_name": "Documented agent",
                    "redirect_uris": [REDIRECT],
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                }
            ).encode()
        served[path] = (kind, raw)
        return url

    yield serve
    server.shutdown()
    server.server_close()


def test_a_documented_client_is_shown_by_its_host_and_gets_a_code(client, alice, oauth_on, documents):
    client_id = documents("/good.json")
    client.force_login(alice)
    verifier, challenge = pkce()
    page, answer = consent(client, authorize_query(client_id, challenge), projects=["alpha"], role="agent")
    text = page.content.decode()
    assert "Documented agent" in text and "described by localhost:" in text
    assert "code" in code_of(answer)
    assert Application.objects.get(client_id=client_id).name == "Documented agent"


@pytest.mark.parametrize(
    "case",
    ["not json", "not json at all", "too large", "another client id", "private address"],
)
def test_a_bad_document_is_refused_and_nothing_is_made(client, alice, oauth_on, documents, settings, case):
    path = "/" + case.replace(" ", "-") + ".json"
    if case == "not json":
        client_id = documents(path, kind="text/html", raw=b"<html>hello</html>")
    elif case == "not json at all":
        client_id = documents(path, raw=b"{not json")
    elif case == "too large":
        # A document that would be accepted, but for its size.
        client_id = documents(path)
        document = {"client_id": client_id, "client_name": "x" * 20_000, "redirect_uris": [REDIRECT]}
        documents(path, raw=json.dumps(document).encode())
    elif case == "another client id":
        client_id = documents(
            path,
            {"client_id": "https://elsewhere.example/c.json", "client_name": "x", "redirect_uris": [REDIRECT]},
        )
    else:
        client_id = documents(path)
        settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    client.force_login(alice)
    _, challenge = pkce()
    answer = client.get("/oauth/authorize/", authorize_query(client_id, challenge))
    assert answer.status_code == 400
    assert not Application.objects.filter(client_id=client_id).exists()
    assert Grant.objects.count() == 0


def test_dynamic_registration_can_be_turned_off(client, oauth_on):
    oauth_on.OAUTH2_PROVIDER = {**oauth_on.OAUTH2_PROVIDER, "DCR_ENABLED": False}
    meta = client.get("/.well-known/oauth-authorization-server").json()
    assert "registration_endpoint" not in meta
    answer = client.post(
        "/oauth/register/",
        data=json.dumps({"client_name": "x", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}),
        content_type="application/json",
    )
    assert answer.status_code in (403, 404)
    assert Application.objects.count() == 0
