"""Fetching a client ID metadata document: the client's id is an https URL, and its JSON
says the client's name and redirect URIs.

The URL is the client's to choose, so fetching it is server-side request forgery waiting to
happen: the same rules as webhooks apply (sessions_app/webhooks/addresses.py). Every address
the host resolves to must be public (unless NINEPLAN_WEBHOOKS_ALLOW_PRIVATE), the connection
goes to the address that was checked, redirects are not followed, and the fetch is bounded
in time and size. django-oauth-toolkit then checks that the document names the same client
id and is a public client's.
"""

from __future__ import annotations

import json
import ssl
import time
from urllib.parse import urlsplit

import urllib3
from oauth2_provider.cimd import CIMDError
from oauth2_provider.settings import oauth2_settings

from sessions_app.errors import ValidationFailed
from sessions_app.webhooks import addresses

# How long a fetched document stands before it is fetched again, in seconds.
KEEP_SECONDS = 3600


class ClientDocumentFetcher:
    """django-oauth-toolkit's CIMD_METADATA_FETCHER: ``fetch(client_id)`` returns the
    document and how long to keep it, or raises CIMDError saying why not."""

    def fetch(self, client_id: str) -> tuple[dict, int]:
        parts = urlsplit(client_id)
        if parts.scheme != "https" or parts.fragment or not parts.path.strip("/"):
            raise CIMDError("a client id document's URL is https, with a path and no fragment")
        if any(segment in (".", "..") for segment in parts.path.split("/")):
            raise CIMDError("a client id document's URL has no '.' or '..' segments")
        try:
            target = addresses.resolve(client_id)
        except ValidationFailed as exc:
            raise CIMDError(exc.message) from None
        limit = oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS
        deadline = time.monotonic() + limit
        pool = urllib3.HTTPSConnectionPool(
            host=target.address,
            port=target.port,
            timeout=urllib3.Timeout(connect=limit, read=limit, total=limit),
            retries=False,
            maxsize=1,
            ssl_context=ssl.create_default_context(),
            server_hostname=target.host,
        )
        try:
            response = pool.urlopen(
                "GET",
                target.path,
                headers={"Host": parts.netloc, "Accept": "application/json"},
                redirect=False,
                preload_content=False,
            )
            try:
                return self.read(response, deadline), KEEP_SECONDS
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise CIMDError(f"the client id document could not be fetched: {exc}") from None
        finally:
            pool.close()

    def read(self, response, deadline: float) -> dict:
        if response.status != 200:
            raise CIMDError(f"the client id document answered HTTP {response.status}")
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise CIMDError(f"the client id document is not JSON (Content-Type {kind!r})")
        limit = oauth2_settings.CIMD_MAX_DOCUMENT_SIZE
        body = b""
        # Read in pieces against one deadline: a server dripping bytes cannot hold a worker.
        while len(body) <= limit:
            if time.monotonic() > deadline:
                raise CIMDError("the client id document took too long")
            piece = response.read(4096)
            if not piece:
                break
            body += piece
        if len(body) > limit:
            raise CIMDError(f"the client id document is larger than {limit} bytes")
        try:
            document = json.loads(body)
        except ValueError:
            raise CIMDError("the client id document is not valid JSON") from None
        if not isinstance(document, dict):
            raise CIMDError("the client id document is not a JSON object")
        return document
