"""The picture of a session's dependencies (admin/dependency_graph.py): longest-path layers,
arrows that all point one way, no two nodes on top of each other, every text escaped, and a
picture of 200 plans that stays readable."""

from __future__ import annotations

import re

from sessions_app.admin import dependency_graph as graph
from tests.sessions_app.admin_fixtures import HOSTILE


def boxes(svg: str) -> dict[str, tuple[int, int]]:
    found = re.findall(r'data-plan="(\w+)" data-state="\w+"><title>.*?</title><rect x="(\d+)" y="(\d+)"', svg)
    return {plan: (int(x), int(y)) for plan, x, y in found}


def test_a_plans_layer_is_its_longest_chain_of_dependencies():
    edges = [("b", "a"), ("c", "b"), ("c", "a"), ("d", "a")]
    assert graph.layers(["a", "b", "c", "d"], edges) == {"a": 0, "b": 1, "c": 2, "d": 1}


def test_an_edge_that_would_close_a_cycle_does_not_loop():
    assert set(graph.layers(["a", "b"], [("a", "b"), ("b", "a")])) == {"a", "b"}


def test_arrows_point_left_and_nodes_never_overlap():
    nodes = [graph.Node(f"p{i:03d}", "queued", f"Plan {i}") for i in range(30)]
    edges = [(f"p{i:03d}", f"p{i - 1:03d}") for i in range(1, 10)] + [("p015", "p003"), ("p016", "p015")]
    svg = graph.svg(nodes, edges)
    at = boxes(svg)
    assert set(at) == {n.id for n in nodes}
    assert len(set(at.values())) == len(at)
    for plan, dep in edges:
        assert at[plan][0] > at[dep][0]
    assert svg.count('class="np-edge"') == len(edges)


def test_every_text_is_escaped():
    svg = graph.svg([graph.Node("abcde", "held", HOSTILE)], [])
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_a_session_of_200_plans_stays_a_readable_picture():
    nodes = [graph.Node(f"p{i:03d}", ("queued", "completed", "active")[i % 3], f"Plan {i}") for i in range(200)]
    # Chains of five, a fan-in every twenty plans, and some plans on their own.
    edges = [(f"p{i:03d}", f"p{i - 1:03d}") for i in range(150) if i % 5]
    edges += [(f"p{i:03d}", f"p{i - 7:03d}") for i in range(20, 150, 20)]
    svg = graph.svg(nodes, edges)
    width, height = (int(v) for v in re.search(r'viewBox="0 0 (\d+) (\d+)"', svg).groups())
    # Every node at its full size (labels stay legible), the picture within a few screens.
    assert len(boxes(svg)) == 200
    assert width <= 1600 and height <= 3000
