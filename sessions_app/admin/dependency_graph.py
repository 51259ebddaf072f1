"""The picture of a session's dependencies, drawn on the server as SVG: each plan a node
coloured by its state, each dependency an arrow from the plan to the plan it depends on.

The layout is layered: a plan's layer is the length of the longest chain of dependencies
below it (plans that depend on nothing are layer 0, at the left), so every arrow points
leftwards. Within a layer plans are ordered by the mean place of what they depend on
(a few sweeps of the barycentre heuristic), which keeps most arrows short and few crossing.
Plans without any dependency either way are set apart in a grid below, so that a session
of hundreds of independent plans stays a compact picture rather than one tall column.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils.html import escape

from sessions_app.reads import excerpts

NODE_W = 118
NODE_H = 34
GAP_X = 46
GAP_Y = 10
PAD = 12
# Plans with no dependency either way, this many a row.
LOOSE_PER_ROW = 6
SWEEPS = 4
# Fill and text colour of a node by its plan's state (a blocked queued plan is "blocked", one
# waiting for a person after its attempts "waiting").
COLOURS = {
    "queued": ("#bee3f8", "#2a4365"),
    "blocked": ("#fefcbf", "#744210"),
    "active": ("#feebc8", "#7b341e"),
    "in_review": ("#e9d8fd", "#44337a"),
    "held": ("#fed7d7", "#742a2a"),
    "waiting": ("#e2e8f0", "#2d3748"),
    "completed": ("#c6f6d5", "#22543d"),
}


@dataclass(frozen=True)
class Node:
    id: str
    state: str
    label: str


def layers(ids: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Each plan's layer: the longest path of dependencies from it (0: depends on nothing
    shown). Dependencies never form a cycle (a plan depends only on older plans); an edge
    that would close one is ignored rather than looping."""
    deps: dict[str, list[str]] = {i: [] for i in ids}
    for plan, dep in edges:
        if plan in deps and dep in deps:
            deps[plan].append(dep)
    layer: dict[str, int] = {}
    for start in ids:
        if start in layer:
            continue
        # Iterative depth-first walk, so that a chain of hundreds does not hit the recursion limit.
        stack: list[tuple[str, int]] = [(start, 0)]
        visiting = {start}
        while stack:
            node, i = stack[-1]
            children = deps[node]
            if i < len(children):
                stack[-1] = (node, i + 1)
                child = children[i]
                if child not in layer and child not in visiting:
                    visiting.add(child)
                    stack.append((child, 0))
                continue
            layer[node] = 1 + max((layer[c] for c in children if c in layer), default=-1)
            visiting.discard(node)
            stack.pop()
    return layer


def _order(columns: list[list[str]], edges: list[tuple[str, str]]) -> list[list[str]]:
    """Orders each layer by the mean place of the plans each depends on (rightwards
    sweeps) and of its dependents (leftwards sweeps)."""
    deps: dict[str, list[str]] = {}
    dependents: dict[str, list[str]] = {}
    for plan, dep in edges:
        deps.setdefault(plan, []).append(dep)
        dependents.setdefault(dep, []).append(plan)
    place = {n: i for col in columns for i, n in enumerate(col)}

    def sort(col: list[str], by: dict[str, list[str]]) -> list[str]:
        def key(n: str) -> tuple[float, int]:
            near = [place[m] for m in by.get(n, ()) if m in place]
            return (sum(near) / len(near) if near else place[n], place[n])

        ordered = sorted(col, key=key)
        place.update({n: i for i, n in enumerate(ordered)})
        return ordered

    for sweep in range(SWEEPS):
        if sweep % 2 == 0:
            columns = [columns[0], *(sort(c, deps) for c in columns[1:])] if columns else columns
        else:
            columns = [*(sort(c, dependents) for c in columns[:-1]), columns[-1]] if columns else columns
    return columns


def svg(nodes: list[Node], edges: list[tuple[str, str]]) -> str:
    """The picture as an SVG element (safe HTML: every text is escaped)."""
    ids = [n.id for n in nodes]
    known = set(ids)
    edges = [(p, d) for p, d in edges if p in known and d in known and p != d]
    linked = {p for p, _ in edges} | {d for _, d in edges}
    layer = layers([i for i in ids if i in linked], edges)
    columns: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for i in ids:
        if i in layer:
            columns[layer[i]].append(i)
    columns = _order(columns, edges)
    at: dict[str, tuple[int, int]] = {}
    for x, col in enumerate(columns):
        for y, n in enumerate(col):
            at[n] = (PAD + x * (NODE_W + GAP_X), PAD + y * (NODE_H + GAP_Y))
    top = PAD + max((len(c) for c in columns), default=0) * (NODE_H + GAP_Y)
    loose = [i for i in ids if i not in linked]
    if columns and loose:
        top += NODE_H // 2
    for k, n in enumerate(loose):
        at[n] = (PAD + (k % LOOSE_PER_ROW) * (NODE_W + GAP_Y), top + (k // LOOSE_PER_ROW) * (NODE_H + GAP_Y))
    width = PAD * 2 + max(
        len(columns) * (NODE_W + GAP_X) - GAP_X, min(len(loose), LOOSE_PER_ROW) * (NODE_W + GAP_Y) - GAP_Y, NODE_W
    )
    rows = -(-len(loose) // LOOSE_PER_ROW)
    height = max(top + rows * (NODE_H + GAP_Y), PAD * 2 + NODE_H) + PAD
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="np-graph" id="np-graph-svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="Dependencies of {len(ids)} plans">'
        '<defs><marker id="np-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#718096"/></marker></defs>'
    )
    parts = [head]
    for plan, dep in edges:
        (px, py), (dx, dy) = at[plan], at[dep]
        x1, y1, x2, y2 = px, py + NODE_H // 2, dx + NODE_W, dy + NODE_H // 2
        bend = max(12, (x1 - x2) // 2)
        parts.append(
            f'<path class="np-edge" data-from="{plan}" data-to="{dep}" d="M{x1},{y1} C{x1 - bend},{y1} '
            f'{x2 + bend},{y2} {x2},{y2}" fill="none" stroke="#718096" stroke-width="1" '
            'marker-end="url(#np-arrow)"/>'
        )
    for node in nodes:
        x, y = at[node.id]
        fill, ink = COLOURS.get(node.state, ("#e2e8f0", "#2d3748"))
        url = reverse("admin:sessions_app_plan_change", args=[node.id])
        parts.append(
            f'<a href="{escape(url)}" class="np-node" data-plan="{node.id}" data-state="{node.state}">'
            f"<title>{escape(node.id)} ({escape(node.state)}): {escape(node.label)}</title>"
            f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="4" fill="{fill}" stroke="{ink}" '
            'stroke-width="1"/>'
            f'<text x="{x + 6}" y="{y + 14}" font-size="11" font-weight="700" fill="{ink}">{escape(node.id)}</text>'
            f'<text x="{x + 6}" y="{y + 27}" font-size="10" fill="{ink}">{escape(excerpts.one_line(node.label, 18))}</text>'
            "</a>"
        )
    parts.append("</svg>")
    return "".join(parts)
