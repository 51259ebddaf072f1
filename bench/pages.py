"""Admin and REST pages at two data sizes: median time and query count of each page.

The pages are found when the benchmark runs (the admin and the API grow over time):
the 9plan admin pages that exist, and every GET endpoint under /api/ whose path
parameters can be filled in. The second size has ten times the sessions and plans,
and the session page shows a session ten times as large, so an equal query count at
both sizes shows the page's cost does not depend on the amount of data.
"""

from __future__ import annotations

import time
from pathlib import Path

from common import (
    PLAN_COLUMNS,
    TextMaker,
    bulk_insert,
    db_now,
    median,
    plan_ids,
    plan_row,
    progress,
    session_names,
    setup_django,
)

ADMIN_PAGES = (
    ("admin: sessions list", "admin:sessions_app_session_changelist", None, ""),
    ("admin: session page (largest session)", "admin:sessions_app_session_change", "session", ""),
    ("admin: plans list", "admin:sessions_app_plan_changelist", None, ""),
    ("admin: plans list, completed", "admin:sessions_app_plan_changelist", None, "?status__exact=completed"),
    ("admin: plan page", "admin:sessions_app_plan_change", "plan", ""),
    ("admin: history search", "admin:sessions_app_history_search", None, "?q=zircon"),
    ("admin: events list", "admin:sessions_app_event_changelist", None, ""),
    ("admin: home (needs you)", "admin:index", None, ""),
    ("admin: review inbox", "admin:sessions_app_plan_review_inbox", None, ""),
    ("admin: live update, home", "nineplan_live", None, "?view=home"),
    ("admin: live update, review inbox", "nineplan_live", None, "?view=inbox"),
    ("admin: live update, session page (largest session)", "nineplan_live", None, "?view=session&session={session}"),
)
SKIP_API = ("schema", "docs", "swagger", "redoc", "<format>", "<drf_format_suffix", ".", "*")
# Endpoints that answer 400 without a query: what a user would ask them.
API_QUERIES = {"history": "?q=zircon"}


class Seeder:
    """Adds sessions, plans and events in bulk; one session takes a tenth of each batch's plans."""

    def __init__(self) -> None:
        maker = TextMaker(seed=21)
        # A pool of short plans, reused: page cost depends on row counts, not on text variety.
        self.pool = [maker.plan(i, 1000, size=300) for i in range(1000)]
        self.names: set[str] = set()
        self.ids: set[str] = set()
        self.heavy: str | None = None
        self.sample_plan: str | None = None

    def add(self, sessions: int, plans: int) -> None:
        now = db_now()
        names = session_names(sessions, taken=self.names, seed=len(self.names) + 1)
        bulk_insert(
            "sessions_app_session",
            ("name", "task_description", "created_at"),
            ((n, f"benchmark session {i}", now) for i, n in enumerate(names)),
        )
        heavy, rest = names[0], names[1:]
        share = {heavy: plans // 10}
        per = (plans - share[heavy]) // max(1, len(rest))
        for n in rest:
            share[n] = per
        ids = iter(plan_ids(sum(share.values()), taken=self.ids, seed=len(self.ids) + 3))
        rows, events = [], []
        k = 0
        for s_index, (name, count) in enumerate(share.items()):
            queued = count // 10
            for j in range(count):
                pid = next(ids)
                if j < queued:
                    status, position = "queued", j
                elif j == queued and s_index % 2 == 0:
                    status, position = "active", None
                elif j % 20 == 19:
                    status, position = "discarded", None
                elif j % 20 == 18:
                    # Waiting for a reviewer: what the home and the review inbox list.
                    status, position = "in_review", None
                else:
                    status, position = "completed", None
                rows.append(plan_row(pid, name, status, position, self.pool[k % len(self.pool)], now))
                events.append((name, pid, "plan_created", "bench", "{}", now))
                k += 1
        bulk_insert("sessions_app_plan", PLAN_COLUMNS, rows)
        bulk_insert("sessions_app_event", ("session_name", "plan_id", "kind", "actor", "detail", "created_at"), events)
        self.heavy = heavy
        self.sample_plan = next(r[0] for r in rows if r[1] == heavy and r[2] == "completed")


def _pages(seeder: Seeder) -> list[tuple[str, str]]:
    """(label, URL) of every page to measure that exists in this build."""
    from django.contrib.admindocs.views import extract_views_from_urlpatterns, simplify_regex
    from django.urls import NoReverseMatch, get_resolver, reverse

    found = []
    for label, name, arg, query in ADMIN_PAGES:
        args = {"session": [seeder.heavy], "plan": [seeder.sample_plan], None: []}[arg]
        try:
            found.append((label, reverse(name, args=args) + query.format(session=seeder.heavy)))
        except NoReverseMatch:
            pass
    seen = set()
    for _view, regex, _ns, _name in extract_views_from_urlpatterns(get_resolver().url_patterns):
        path = simplify_regex(regex)
        if not path.startswith("/api/") or any(s in path for s in SKIP_API):
            continue
        url = _fill(path, seeder)
        if url:
            url += API_QUERIES.get(url.rstrip("/").rsplit("/", 1)[-1], "")
        if url and url not in seen:
            seen.add(url)
            found.append((f"REST: {path}", url))
    return found


def _fill(path: str, seeder: Seeder) -> str | None:
    """Put a real session name or plan id into each <parameter> of an API path."""
    parts = path.strip("/").split("/")
    out = []
    for i, part in enumerate(parts):
        if not part.startswith("<"):
            out.append(part)
            continue
        name = part.strip("<>").split(":")[-1]
        before = parts[i - 1] if i else ""
        if "session" in name or before == "sessions":
            out.append(seeder.heavy)
        elif "plan" in name or before in ("plans", "history"):
            out.append(seeder.sample_plan)
        else:
            return None
    return "/" + "/".join(out) + "/"


def _read(response) -> None:
    """A streamed answer (the export) does its work while it is read: time all of it."""
    if response.streaming:
        for _ in response.streaming_content:
            pass


def _measure(client, pages: list[tuple[str, str]], repeats: int) -> dict[str, dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out = {}
    for label, url in pages:
        _read(client.get(url))  # warm: templates compiled, caches filled, as on a running server
        times, queries, status = [], 0, None
        for _ in range(repeats):
            with CaptureQueriesContext(connection) as ctx:
                t0 = time.perf_counter()
                response = client.get(url)
                _read(response)
                times.append((time.perf_counter() - t0) * 1000)
            queries, status = len(ctx.captured_queries), response.status_code
        out[label] = {"ms": median(times), "queries": queries, "status": status}
    return out


def run(data_dir: Path, params: dict) -> dict:
    setup_django(data_dir)
    from django.contrib.auth import get_user_model
    from django.test import Client

    (s1, p1), (s2, p2) = params["pages_sizes"]
    repeats = params["pages_repeats"]
    user = get_user_model().objects.create_superuser("bench", "bench@example.invalid", "bench-password")
    # A page that raises is measured as the 500 it would be on a server, not a crash here.
    client = Client(raise_request_exception=False)
    client.force_login(user)
    seeder = Seeder()

    t0 = time.perf_counter()
    seeder.add(s1, p1)
    progress(f"pages: seeded {s1:,} sessions / {p1:,} plans in {time.perf_counter() - t0:.0f} s")
    small = _measure(client, _pages(seeder), repeats)
    t0 = time.perf_counter()
    seeder.add(s2 - s1, p2 - p1)
    progress(f"pages: seeded up to {s2:,} sessions / {p2:,} plans in {time.perf_counter() - t0:.0f} s")
    large = _measure(client, _pages(seeder), repeats)

    rows = []
    for label in small:
        if label not in large:
            continue
        a, b = small[label], large[label]
        if a["status"] == b["status"] == 405:
            continue  # a write-only endpoint (the review decision): there is no page to read
        status = "" if a["status"] == b["status"] == 200 else f" [HTTP {a['status']}/{b['status']}]"
        rows.append(
            {
                "bench": "pages",
                "figure": f"{label}{status}: queries {a['queries']} -> {b['queries']}",
                "value": b["ms"],
                "baseline": a["ms"],
                "unit": "ms",
                "ratio": b["ms"] / a["ms"] if a["ms"] else None,
                "target": "same query count",
                "met": a["queries"] == b["queries"] and a["status"] == b["status"] == 200,
            }
        )
    if not rows:
        rows.append(
            {
                "bench": "pages",
                "figure": "no admin or REST page found",
                "value": None,
                "baseline": None,
                "unit": "ms",
                "ratio": None,
                "target": "same query count",
                "met": False,
            }
        )
    return {"rows": rows, "sizes": [[s1, p1], [s2, p2]]}
