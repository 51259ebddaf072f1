"""Django settings for 9plan.

Everything a deployment changes comes from the environment (see README, "Configuration"),
read through the strict helpers in nineplan.config.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from nineplan.config import (
    default_data_dir,
    env_bool,
    env_choice,
    env_group_roles,
    env_int,
    env_list,
    env_path,
    env_pattern,
    env_public_url,
    env_seconds,
    env_str,
)
from sessions_app.store.datadir import private_database, private_folder
from sessions_app.version import version

BASE_DIR = Path(__file__).resolve().parent.parent

# --- 9plan -----------------------------------------------------------------------------

NINEPLAN_SESSIONS_PATH = env_path("NINEPLAN_SESSIONS_PATH", default_data_dir() / "sessions")
# The data directory holds the embedded database and the generated secret key; it is the
# parent of the sessions folder, so one variable moves all of 9plan's state.
NINEPLAN_DATA_DIR = NINEPLAN_SESSIONS_PATH.parent
NINEPLAN_LOG_LEVEL = env_choice("NINEPLAN_LOG_LEVEL", ("debug", "info", "warn", "error"), "info")
NINEPLAN_TRANSPORT = env_choice("NINEPLAN_TRANSPORT", ("stdio", "http"), "stdio")
# The MCP tools listed: every one, or the core set for clients that pay per token.
NINEPLAN_TOOLS = env_choice("NINEPLAN_TOOLS", ("all", "core"), "all")
# Plan files are a local copy of each open plan for agents on this machine. "" (unset) means
# "auto" (the default) means on, except in `mcp --transport http`, whose agents are on other
# machines and cannot read them.
NINEPLAN_PLAN_FILES = env_choice("NINEPLAN_PLAN_FILES", ("on", "off", "auto"), "auto")
NINEPLAN_HTTP_HOST = env_str("NINEPLAN_HTTP_HOST", "127.0.0.1")
NINEPLAN_HTTP_PORT = env_int("NINEPLAN_HTTP_PORT", 8080, minimum=1, maximum=65535)
# A token is always required off loopback; this requires it on loopback too.
NINEPLAN_HTTP_REQUIRE_TOKEN = env_bool("NINEPLAN_HTTP_REQUIRE_TOKEN", False)
# Host names (and origins) clients may use beyond the ones derived from the bind address,
# e.g. the public name behind a reverse proxy; "*" leaves the Host check to the proxy.
NINEPLAN_HTTP_ALLOWED_HOSTS = env_list("NINEPLAN_HTTP_ALLOWED_HOSTS", [])
NINEPLAN_HTTP_ALLOWED_ORIGINS = env_list("NINEPLAN_HTTP_ALLOWED_ORIGINS", [])
# Every request on its own, no MCP session ids: any of several server processes can answer
# any request, for clients of every protocol version (they pass session_name).
NINEPLAN_HTTP_STATELESS = env_bool("NINEPLAN_HTTP_STATELESS", False)

# Limits on what an agent may store; each is checked before anything is written.
NINEPLAN_MAX_FIELD_CHARS = env_int("NINEPLAN_MAX_FIELD_CHARS", 65_536, minimum=1)
NINEPLAN_MAX_PLAN_CHARS = env_int("NINEPLAN_MAX_PLAN_CHARS", 262_144, minimum=1)
NINEPLAN_MAX_QUEUE_LENGTH = env_int("NINEPLAN_MAX_QUEUE_LENGTH", 100_000, minimum=1)
NINEPLAN_MAX_QUERY_CHARS = env_int("NINEPLAN_MAX_QUERY_CHARS", 1_000, minimum=1)
NINEPLAN_MAX_BATCH = env_int("NINEPLAN_MAX_BATCH", 50, minimum=1)
# How many times a reviewer may send a plan back before it waits for a person instead of
# returning to the queue.
NINEPLAN_MAX_REJECTIONS = env_int("NINEPLAN_MAX_REJECTIONS", 3, minimum=1)
# How often a long-running MCP server reclaims expired claims, in seconds (0: never; the
# next pull in a session, and nineplan_reclaim, still do).
# The admin's live pages: how many polls a second a server (all its worker processes) aims
# to answer; with more pages open than that, each page is told to ask less often.
NINEPLAN_LIVE_POLLS_PER_SECOND = env_int("NINEPLAN_LIVE_POLLS_PER_SECOND", 50, minimum=1, maximum=100_000)
NINEPLAN_RECLAIM_INTERVAL = env_int("NINEPLAN_RECLAIM_INTERVAL", 30, minimum=0, maximum=86_400)

# The address people and other systems reach this server by, e.g. https://9plan.example.com
# (behind a proxy, the proxy's): links that leave the server (a webhook's link to a plan's
# page) are made from it, and it is the OAuth issuer.
NINEPLAN_PUBLIC_URL = env_public_url("NINEPLAN_PUBLIC_URL")

# Webhooks (docs/design.md, "Webhooks"). A subscription's URL that resolves to a loopback,
# private or link-local address is refused unless this is true: the server would otherwise
# post to its own network for whoever may subscribe (server-side request forgery).
NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = env_bool("NINEPLAN_WEBHOOKS_ALLOW_PRIVATE", False)
# How often a delivery loop (in `serve`, the HTTP MCP server, `nineplan_webhooks`) looks for
# deliveries that are due, in seconds (0: no loop inside the servers).
NINEPLAN_WEBHOOKS_INTERVAL = env_int("NINEPLAN_WEBHOOKS_INTERVAL", 2, minimum=0, maximum=3600)
# How long one attempt may take, connecting, sending and reading the answer together, and
# how long a loop's claim on a delivery lasts before another loop may send it: at least an
# attempt and the margin (recording the attempt, clocks of servers a little apart), so two
# loops never send it at once.
NINEPLAN_WEBHOOKS_TIMEOUT = env_int("NINEPLAN_WEBHOOKS_TIMEOUT", 10, minimum=1, maximum=300)
NINEPLAN_WEBHOOKS_CLAIM_SECONDS = env_int("NINEPLAN_WEBHOOKS_CLAIM_SECONDS", 60, minimum=6, maximum=3600)
NINEPLAN_WEBHOOKS_CLAIM_MARGIN = 5
# How many messages a loop sends at once, each to a different subscription.
NINEPLAN_WEBHOOKS_CONCURRENCY = env_int("NINEPLAN_WEBHOOKS_CONCURRENCY", 8, minimum=1, maximum=64)
# The wait after each failed attempt; after the last one the delivery is marked failed.
# The default retries for a little over 28 hours.
NINEPLAN_WEBHOOKS_RETRY_DELAYS = env_seconds(
    "NINEPLAN_WEBHOOKS_RETRY_DELAYS", (5, 30, 120, 600, 3600, 10_800, 21_600, 21_600, 21_600, 21_600)
)
if NINEPLAN_WEBHOOKS_CLAIM_SECONDS < NINEPLAN_WEBHOOKS_TIMEOUT + NINEPLAN_WEBHOOKS_CLAIM_MARGIN:
    raise ImproperlyConfigured(
        f"NINEPLAN_WEBHOOKS_CLAIM_SECONDS={str(NINEPLAN_WEBHOOKS_CLAIM_SECONDS)!r} is not accepted; use at least "
        f"NINEPLAN_WEBHOOKS_TIMEOUT ({NINEPLAN_WEBHOOKS_TIMEOUT}) + {NINEPLAN_WEBHOOKS_CLAIM_MARGIN}."
    )
# The project new sessions go into when the caller names none and may work in every
# project (the local user: stdio, and HTTP without a token).
NINEPLAN_PROJECT = env_pattern(
    "NINEPLAN_PROJECT",
    r"[a-z0-9][a-z0-9-]{0,62}",
    "default",
    "a project name: 1 to 63 characters of a-z, 0-9 and '-', starting with a letter or digit",
)

# --- Sign-in for MCP clients (OAuth 2.1, docs/deployment.md) -----------------------------
# NINEPLAN_PUBLIC_URL (above) is also the OAuth issuer.
# 9plan as the authorization server of its MCP endpoint and REST API.
NINEPLAN_OAUTH = env_bool("NINEPLAN_OAUTH", False)
if NINEPLAN_OAUTH and not NINEPLAN_PUBLIC_URL:
    raise ImproperlyConfigured(
        "NINEPLAN_OAUTH=true needs NINEPLAN_PUBLIC_URL, the URL clients reach this server by "
        "(e.g. https://9plan.example.com): it is the issuer of every token."
    )
# The MCP endpoint as clients reach it (a token is bound to it): by default /mcp under the
# public URL, as a reverse proxy that sends /mcp to `mcp --transport http` has it.
NINEPLAN_MCP_URL = env_public_url("NINEPLAN_MCP_URL") or (NINEPLAN_PUBLIC_URL + "/mcp" if NINEPLAN_PUBLIC_URL else "")
NINEPLAN_API_URL = NINEPLAN_PUBLIC_URL + "/api" if NINEPLAN_PUBLIC_URL else ""
# Dynamic client registration (RFC 7591): any client may register itself. Off, clients come
# by client ID metadata documents only (or are made in the admin).
NINEPLAN_OAUTH_REGISTRATION = env_bool("NINEPLAN_OAUTH_REGISTRATION", True)
NINEPLAN_OAUTH_ACCESS_SECONDS = env_int("NINEPLAN_OAUTH_ACCESS_SECONDS", 3600, minimum=60, maximum=86_400)
NINEPLAN_OAUTH_REFRESH_DAYS = env_int("NINEPLAN_OAUTH_REFRESH_DAYS", 30, minimum=1, maximum=365)
OAUTH_SCOPE = "nineplan"
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"

OAUTH2_PROVIDER = {
    "SCOPES": {OAUTH_SCOPE: "Act as you in 9plan, within the projects and the role you choose"},
    "DEFAULT_SCOPES": [OAUTH_SCOPE],
    # Authorization code with PKCE S256 only: no implicit grant, no password grant, no plain
    # PKCE, no token in a query string (each refused, not merely discouraged).
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    # RFC 9207: `iss` in every authorization response, so a client talking to several
    # servers cannot be tricked into sending one server's code to another.
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    # Tokens are kept as SHA-256 checksums only: a copy of the database holds no usable token.
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    # A refresh token is good once: using it again (a stolen copy) revokes its whole family.
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": NINEPLAN_OAUTH_ACCESS_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": NINEPLAN_OAUTH_REFRESH_DAYS * 86_400,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "OIDC_ISS_ENDPOINT": NINEPLAN_PUBLIC_URL or "",
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    # Native clients (VS Code, Claude Code) wait on a loopback port of their choosing (RFC 8252),
    # an http URI: allowed while OAuth is on, and then `check --deploy` says so (W008).
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"] if NINEPLAN_OAUTH else ["https"],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "DCR_ENABLED": NINEPLAN_OAUTH and NINEPLAN_OAUTH_REGISTRATION,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": NINEPLAN_OAUTH,
    # Fetched under the webhooks' rules against server-side request forgery.
    "CIMD_METADATA_FETCHER": "sessions_app.oauth.documents.ClientDocumentFetcher",
    "CIMD_FETCH_TIMEOUT_SECONDS": 5,
    "CIMD_MAX_DOCUMENT_SIZE": 16 * 1024,
}

# --- Single sign-on for people (OpenID Connect, docs/deployment.md) ----------------------
NINEPLAN_OIDC_ISSUER = env_public_url("NINEPLAN_OIDC_ISSUER") or ""
NINEPLAN_OIDC_CLIENT_ID = env_str("NINEPLAN_OIDC_CLIENT_ID", "")
NINEPLAN_OIDC_CLIENT_SECRET = env_str("NINEPLAN_OIDC_CLIENT_SECRET", "")
NINEPLAN_OIDC_GROUPS_CLAIM = env_str("NINEPLAN_OIDC_GROUPS_CLAIM", "groups")
NINEPLAN_OIDC_GROUP_ROLES = env_group_roles("NINEPLAN_OIDC_GROUP_ROLES", ("reader", "agent", "reviewer", "manager"))
# Password logins on the admin's page; off, people sign in through the provider only.
NINEPLAN_PASSWORD_LOGIN = env_bool("NINEPLAN_PASSWORD_LOGIN", True)
if NINEPLAN_OIDC_ISSUER and not (NINEPLAN_OIDC_CLIENT_ID and NINEPLAN_OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured(
        "NINEPLAN_OIDC_ISSUER is set: set NINEPLAN_OIDC_CLIENT_ID and NINEPLAN_OIDC_CLIENT_SECRET too "
        "(the client 9plan is at your provider)."
    )
if not NINEPLAN_PASSWORD_LOGIN and not NINEPLAN_OIDC_ISSUER:
    raise ImproperlyConfigured(
        "NINEPLAN_PASSWORD_LOGIN=false leaves nobody a way to sign in; set NINEPLAN_OIDC_ISSUER first."
    )
OIDC_RP_CLIENT_ID = NINEPLAN_OIDC_CLIENT_ID
OIDC_RP_CLIENT_SECRET = NINEPLAN_OIDC_CLIENT_SECRET
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_RP_SCOPES = "openid email profile"
OIDC_AUTHENTICATE_CLASS = "sessions_app.oauth.sso.SignInView"
OIDC_TIMEOUT = 10
LOGIN_REDIRECT_URL = "/admin/"
LOGIN_REDIRECT_URL_FAILURE = "/admin/login/?sso=refused"

# --- Django ----------------------------------------------------------------------------

DEBUG = env_bool("DJANGO_DEBUG", False)


def _secret_key() -> str:
    key = os.environ.get("DJANGO_SECRET_KEY")
    if key:
        return key
    # Generated once and kept beside the database, so sessions and tokens survive a
    # restart without anyone having to invent a key; never committed anywhere.
    path = NINEPLAN_DATA_DIR / "secret_key"
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ImproperlyConfigured(f"DJANGO_SECRET_KEY is unset and {path} cannot be read: {exc}") from exc
    key = secrets.token_urlsafe(50)
    try:
        private_folder(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ImproperlyConfigured(f"DJANGO_SECRET_KEY is unset and {path} cannot be written: {exc}") from exc
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(key)
    return key


ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # The admin without its autodiscovery: nineplan/urls.py runs it when the web app loads
    # its URLs, so the MCP server, which serves no page, does not import every admin module
    # before its first tool call.
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "sessions_app",
    "mcp_bridge",
    "oauth2_provider",
    "mozilla_django_oidc",
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page and REST view runs for its user's projects and roles (sessions_app/access.py).
    "sessions_app.access.CallerMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "nineplan.urls"

# The project's own templates (the admin's frame): templates/ in a checkout; an installed
# wheel carries the same folder inside the nineplan package.
PROJECT_TEMPLATES = (
    Path(__file__).resolve().parent / "templates"
    if (Path(__file__).resolve().parent / "templates").is_dir()
    else BASE_DIR / "templates"
)

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [PROJECT_TEMPLATES],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "nineplan.wsgi.application"
ASGI_APPLICATION = "nineplan.asgi.application"

# On PostgreSQL with the connection pool: executions of one statement on a connection after
# which it is prepared (psycopg's own default).
PREPARE_AFTER = 5


def _databases() -> dict:
    url = os.environ.get("DATABASE_URL", "").strip()
    if url and not url.startswith("sqlite"):
        import dj_database_url

        try:
            db = dj_database_url.parse(url, conn_max_age=0)
        except Exception as exc:  # dj_database_url raises several types for bad URLs
            raise ImproperlyConfigured(
                f"DATABASE_URL is not a database URL 9plan accepts ({exc}); use sqlite:///PATH or "
                "postgres://USER:PASSWORD@HOST:PORT/NAME."
            ) from exc
        if db["ENGINE"] != "django.db.backends.postgresql":
            raise ImproperlyConfigured("DATABASE_URL must name SQLite (sqlite:///PATH) or PostgreSQL (postgres://...).")
        if not db.get("NAME"):
            raise ImproperlyConfigured("DATABASE_URL names no database; use postgres://USER:PASSWORD@HOST:PORT/NAME.")
        # MCP tools run in up to 40 worker threads per process and each thread would keep
        # its own connection; a pool shared by the threads bounds what one process holds
        # (and saves opening a new PostgreSQL connection on every tool call; docs/benchmarks.md).
        # NINEPLAN_DB_POOL_SIZE=0 turns the pool off (e.g. behind PgBouncer): then every
        # request and tool call opens and closes its own connection.
        pool_size = env_int("NINEPLAN_DB_POOL_SIZE", 10, minimum=0, maximum=1000)
        # Named per process, so that a restore tells other processes' connections from its own
        # pooled ones in pg_stat_activity (sessions_app/store/attachment.py).
        db.setdefault("OPTIONS", {}).setdefault("application_name", f"9plan/{os.getpid()}")
        db["CONN_MAX_AGE"] = 0  # Django's pool requires 0; without the pool, 0 is the safe choice
        db["CONN_HEALTH_CHECKS"] = True
        if pool_size:
            db.setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": pool_size, "timeout": 30}
            # Statements are prepared on the pooled connections (sent with their parameters
            # apart, prepared by psycopg once a connection has run one PREPARE_AFTER times):
            # PostgreSQL then parses each once per connection, and plans it once where one
            # plan suits every call, instead of doing both at every call
            # (docs/design.md, "Transactions and writer turns"). Without the pool (PgBouncer
            # in front) every request has a new connection and nothing is prepared, as a
            # pooler in transaction mode needs.
            db["OPTIONS"].update(server_side_binding=True, prepare_threshold=PREPARE_AFTER)
        # The suite creates (and drops) this database; the role needs CREATEDB.
        db["TEST"] = {"NAME": f"test_{db['NAME']}"}
        return {"default": db}
    if url:
        # sqlite:///relative or sqlite:////absolute, as dj-database-url reads them.
        name = url.split("sqlite://", 1)[1]
        name = name[1:] if name.startswith("/") else name
        path = Path(name) if name else NINEPLAN_DATA_DIR / "9plan.sqlite3"
        if not path.is_absolute():
            path = Path.cwd() / path
    else:
        path = NINEPLAN_DATA_DIR / "9plan.sqlite3"
    return {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            # Measured: Django's deferred transactions fail under concurrency ("database
            # is locked" at once when a reader upgrades to a writer). IMMEDIATE takes the
            # write lock at BEGIN; WAL lets readers go on meanwhile; the long timeout
            # covers SQLite's unfair lock waits under heavy contention.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;"
                    " PRAGMA foreign_keys=ON;"
                ),
            },
            "TEST": {"NAME": str(path.with_name(path.stem + "-test.sqlite3"))},
        }
    }


DATABASES = _databases()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# Dates and times read one way in every admin list and page: "2026-11-30 20:46 UTC".
FORMAT_MODULE_PATH = ["nineplan.formats"]

STATIC_URL = "static/"
# Collected static files: staticfiles/ in a checkout (as `make run` always had them); an
# installed 9plan has no folder of its own to write into and keeps them in the data
# directory, beside the database.
RUNS_FROM_CHECKOUT = (BASE_DIR / "manage.py").is_file()
STATIC_ROOT = BASE_DIR / "staticfiles" if RUNS_FROM_CHECKOUT else NINEPLAN_DATA_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "admin:login"

# The admin's live pages keep each changed view's render in the "live" cache, shared by all
# of one machine's server processes (gunicorn's workers each have their own memory, so
# Django's default in-memory cache would render a view once per worker and find nothing
# the other workers rendered). Files in the data directory: no service to run, and no
# database writes, which on SQLite would take turns with the agents' writes.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "live": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(NINEPLAN_DATA_DIR / "cache" / "live"),
        # A render is of one minute (its ages move with the clock): two minutes is plenty.
        "TIMEOUT": 120,
        "OPTIONS": {"MAX_ENTRIES": 2000},
    },
}

# --- Failed logins (django-axes) ---------------------------------------------------------
# An admin on a network is open to password guessing: after NINEPLAN_LOGIN_FAILURE_LIMIT
# failed logins for one username from one address, that pair is locked out for
# NINEPLAN_LOGIN_COOLOFF_MINUTES (a correct password is refused too, and further tries
# restart the wait). Other users, and the same user from elsewhere, are not affected, so a
# guesser cannot lock everyone out. `9plan axes_reset_username NAME` unlocks at once.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # Project roles answer user.has_perm("nineplan.view", session) and the like.
    "rules.permissions.ObjectPermissionBackend",
    # Passwords (unless NINEPLAN_PASSWORD_LOGIN=false); the provider's word (single sign-on).
    *(["django.contrib.auth.backends.ModelBackend"] if NINEPLAN_PASSWORD_LOGIN else []),
    *(["sessions_app.oauth.sso.Backend"] if NINEPLAN_OIDC_ISSUER else []),
]
AXES_ENABLED = env_bool("NINEPLAN_LOGIN_LOCKOUT", True)
AXES_FAILURE_LIMIT = env_int("NINEPLAN_LOGIN_FAILURE_LIMIT", 5, minimum=1, maximum=1000)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("NINEPLAN_LOGIN_COOLOFF_MINUTES", 15, minimum=1, maximum=10080))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True  # a correct login forgets the failures before it
AXES_LOCKOUT_TEMPLATE = "admin/nineplan_locked_out.html"
# The address is the connection's own: a client could otherwise pick a new one for every
# guess by sending its own X-Forwarded-For. Behind a proxy (DJANGO_BEHIND_PROXY) the
# proxy's header is trusted, one hop deep.
BEHIND_PROXY = env_bool("DJANGO_BEHIND_PROXY", False)
AXES_IPWARE_META_PRECEDENCE_ORDER = ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if BEHIND_PROXY else ["REMOTE_ADDR"]
AXES_IPWARE_PROXY_COUNT = 1 if BEHIND_PROXY else None
AXES_IPWARE_PROXY_ORDER = "right-most"

REST_FRAMEWORK = {
    # Token first: DRF answers a missing credential with the first class's
    # WWW-Authenticate challenge (401); session auth alone would make it a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        # OAuth access tokens bound to the API (sessions_app/api/oauth.py), before the static
        # tokens sent as Bearer, which it passes on.
        "sessions_app.api.oauth.OAuthTokenAuthentication",
        "sessions_app.api.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "sessions_app.api.errors.exception_handler",
}

# The OpenAPI schema at /api/schema/ and its docs at /api/docs/; the docs' scripts come
# from the sidecar package through our own static files, never from a CDN.
SPECTACULAR_SETTINGS = {
    "TITLE": "9plan REST API",
    "DESCRIPTION": (
        "9plan sessions, queues, plans, history search and the event feed, and the writes that put work in "
        "(a session, plans, a queued plan's correction) and decide reviews; "
        "`GET /api/` lists the endpoints. Authenticate with `Authorization: Token <key>` or "
        "`Authorization: Bearer <key>` (create one with "
        "`9plan token USER`); only this schema and its docs page are public. "
        "Errors are application/problem+json (RFC 9457) with a `category`. Each endpoint takes the query "
        "parameters listed for it (and DRF's `format`, `json` or `api`); any other is refused with a 400 "
        "naming it. Pages hold `page_size` items, 1 to 100."
    ),
    "VERSION": version(),
    "SCHEMA_PATH_PREFIX": "/api/",
    "SERVE_INCLUDE_SCHEMA": False,
    # Public on purpose: they describe the API and hold no data, and the docs page could
    # not show a schema that needed a token it has no way to send. Every other endpoint
    # under /api/ needs credentials.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

# Security headers; HTTPS-only cookies and HSTS switch on with DJANGO_SECURE (behind TLS).
DJANGO_SECURE = env_bool("DJANGO_SECURE", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = DJANGO_SECURE
CSRF_COOKIE_SECURE = DJANGO_SECURE
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_PROXY else None

LOGGING_CONFIG = None  # nineplan.logging configures logging once, structured, on stderr.

# Last, once every setting above was accepted: a refused one stops 9plan before anything is
# written to the data directory. SQLite creates its database file but not the folder: a
# first `9plan migrate` on a fresh machine would fail without it (a folder that cannot be
# made is reported by the connection itself, with SQLite's own message). Both are made
# here, the owner's alone, before any connection: SQLite would make the file 0644.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    try:
        private_database(Path(DATABASES["default"]["NAME"]))
    except OSError:
        pass
SECRET_KEY = _secret_key()

from nineplan.logging import configure_logging  # noqa: E402

configure_logging(NINEPLAN_LOG_LEVEL)
