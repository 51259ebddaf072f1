"""Turning agent-written text and session data into HTML for the admin.

Everything here treats plan text as hostile: agents write it, and an agent may have read
a web page that told it to write ``<script>``. Markdown is rendered with raw HTML off and
the result is cleaned again with an allow-list; search snippets escape the text first and
add only their own ``<mark>`` tags.
"""

from __future__ import annotations

import html as html_text
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

import nh3
from django.utils import formats
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import localtime
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from sessions_app.models import SECTION_TITLES, Event
from sessions_app.reads import excerpts, queries

# html=False makes markdown-it print any HTML in the source as text; its link check
# already refuses javascript:, vbscript:, file: and data: URLs (except some images).
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def _image_as_text(renderer, tokens, idx, options, env) -> str:
    # An image becomes its alt text in brackets: the reviewer learns what the agent meant
    # to show, and the page fetches nothing from a URL an agent chose.
    alt = renderer.renderInlineAsText(tokens[idx].children, options, env).strip()
    return escapeHtml(f"[image: {alt}]" if alt else "[image]")


_markdown.add_render_rule("image", _image_as_text)

# Defence in depth: even if a Markdown rule ever emitted something unexpected, only these
# tags and attributes reach the page. No <img>: an agent-chosen image URL would make the
# reviewer's browser call a server of the agent's choosing.
ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
ALLOWED_URL_SCHEMES = {"http", "https", "mailto"}


def markdown(text: str | None) -> SafeString:
    """Agent Markdown as sanitised HTML (links open nothing on their own and carry no referrer)."""
    if not text:
        return mark_safe("")
    html = _markdown.render(text)
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=ALLOWED_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return mark_safe(clean)


def markdown_text(text: str | None) -> str:
    """Agent Markdown as the words a reader sees on the rendered page, without its markup
    (``**23 routes**`` reads "23 routes"): plain text, to be escaped by whoever shows it."""
    if not text:
        return ""
    return html_text.unescape(nh3.clean(_markdown.render(text), tags=set(), strip_comments=True))


# --- search snippets ---------------------------------------------------------------------

SNIPPET_CHARS = 220


def highlight(text: str | None, pattern: re.Pattern[str] | None, *, limit: int = SNIPPET_CHARS) -> SafeString:
    """A window of ``text`` around its first match, escaped, with each match in <mark>.

    The window is cut into pieces at the matches and every piece is escaped on its own;
    the only markup in the result is the <mark> tags added here.
    """
    window = excerpts.around_match(text, pattern, limit)
    out = [excerpts.ELLIPSIS if window.cut_before else ""]
    pos = 0
    for start, end in window.spans:
        out.append(escape(window.text[pos:start]))
        out.append(f"<mark>{escape(window.text[start:end])}</mark>")
        pos = end
    out.append(escape(window.text[pos:]))
    if window.cut_after:
        out.append(excerpts.ELLIPSIS)
    return mark_safe("".join(out))


def search_result(hit: queries.HistoryHit, pattern: re.Pattern[str] | None) -> dict:
    """A hit with its goal and outcome highlighted and, when neither holds a match, the
    first other section that does, so the reviewer sees why the plan was found.

    Snippets show the text as the plan page reads it, without the Markdown's markup: a
    window of a text can cut a Markdown construct in two, so it cannot be rendered itself.
    """
    plan = hit.plan
    goal, outcome = markdown_text(plan.goal), markdown_text(plan.outcome)
    elsewhere = None
    if not (excerpts.has_match(goal, pattern) or excerpts.has_match(outcome, pattern)):
        name = excerpts.first_matching(plan, pattern, ("context", "inputs", "outputs", "notes"))
        if name is not None:
            elsewhere = (SECTION_TITLES[name], highlight(markdown_text(getattr(plan, name)), pattern))
    return {
        "hit": hit,
        "plan": plan,
        "goal": highlight(goal, pattern),
        "outcome": highlight(outcome, pattern),
        "elsewhere": elsewhere,
    }


# --- who did it ---------------------------------------------------------------------------


def actor_label(actor: str) -> str:
    """Who an event's actor is, in the one style every text of 9plan uses (the notes a
    service writes, what an agent is told, the event log, the REST API): the actor as the
    event stores it. "agent" (MCP, locally), "agent:alice/laptop" (a token), "user:sam" (a
    person), a worker after a slash ("agent/alpha"), and 9plan's own jobs by their name
    ("lease", "repair", "import"). Translating it here would give one person two names."""
    return actor


def event_detail(detail: dict) -> str:
    """An event's detail as one short line of ``key: value`` pairs."""
    if not isinstance(detail, dict):
        return ""
    parts = []
    for key, value in detail.items():
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        parts.append(f"{key}: {value}")
    return excerpts.one_line("; ".join(parts), 240) or ""


def timeline(events: list[Event]) -> list[dict]:
    rows = []
    for event in events:
        rows.append({"event": event, "who": actor_label(event.actor), "detail": event_detail(event.detail)})
    return rows


# --- the session chart --------------------------------------------------------------------

CHART_WIDTH = 640
CHART_HEIGHT = 180
CHART_PAD_LEFT = 36
CHART_PAD_RIGHT = 12
CHART_PAD_TOP = 10
CHART_PAD_BOTTOM = 24
CHART_MAX_POINTS = 600


@dataclass
class Chart:
    width: int
    height: int
    queue_points: str
    done_points: str
    x_left: int
    x_right: int
    y_top: int
    y_bottom: int
    y_max: int
    start: datetime
    end: datetime
    start_label: str
    end_label: str
    peak_queue: int
    completions: int
    final_queue: int


def _thin(series: list[tuple[datetime, int, int]]) -> list[tuple[datetime, int, int]]:
    # A long session has more events than the chart has pixels: keep the last value of
    # each time bucket, which is what a step line would show there anyway.
    if len(series) <= CHART_MAX_POINTS:
        return series
    t0, t1 = series[0][0], series[-1][0]
    span = (t1 - t0).total_seconds() or 1.0
    buckets: dict[int, tuple[datetime, int, int]] = {}
    for row in series:
        buckets[int((row[0] - t0).total_seconds() / span * (CHART_MAX_POINTS - 1))] = row
    return [buckets[k] for k in sorted(buckets)]


def _axis_end_label(start: datetime, end: datetime) -> str:
    """The right end of the time axis, as precise as the span needs to differ from the left
    end (the start, written in full): "+12 s" under a minute, a time of day within one
    day, a date and time beyond."""
    span = (end - start).total_seconds()
    if span < 60:
        return f"+{span:.1f} s" if span < 10 else f"+{span:.0f} s"
    if localtime(end).date() == localtime(start).date():
        return formats.time_format(localtime(end), "TIME_FORMAT")
    return formats.date_format(localtime(end), "DATETIME_FORMAT")


def chart(series: list[tuple[datetime, int, int]]) -> Chart | None:
    """Step lines of queue length and completions over time, as SVG coordinates."""
    if not series:
        return None
    peak_queue = max(q for _, q, _ in series)
    completions = series[-1][2]
    points = _thin(series)
    start, end = points[0][0], points[-1][0]
    # The axis runs from the first event to the last, however short: padding a session of a
    # few seconds to a minute drew all of it at the left edge and a flat line after.
    if end <= start:
        end = start + timedelta(seconds=1)
    span = (end - start).total_seconds()
    y_max = max(peak_queue, completions, 1)
    left, right = CHART_PAD_LEFT, CHART_WIDTH - CHART_PAD_RIGHT
    top, bottom = CHART_PAD_TOP, CHART_HEIGHT - CHART_PAD_BOTTOM

    def x(at: datetime) -> float:
        return left + (at - start).total_seconds() / span * (right - left)

    def y(value: int) -> float:
        return bottom - value / y_max * (bottom - top)

    def steps(index: Literal[1, 2]) -> str:  # a count's column
        coords: list[str] = [f"{left:.1f},{y(0):.1f}"]
        previous = 0
        for row in points:
            px = x(row[0])
            coords.append(f"{px:.1f},{y(previous):.1f}")
            coords.append(f"{px:.1f},{y(row[index]):.1f}")
            previous = row[index]
        coords.append(f"{right:.1f},{y(previous):.1f}")
        return " ".join(coords)

    return Chart(
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        queue_points=steps(1),
        done_points=steps(2),
        x_left=left,
        x_right=right,
        y_top=top,
        y_bottom=bottom,
        y_max=y_max,
        start=start,
        end=end,
        start_label=formats.date_format(localtime(start), "DATETIME_FORMAT"),
        end_label=_axis_end_label(start, end),
        peak_queue=peak_queue,
        completions=completions,
        final_queue=series[-1][1],
    )
