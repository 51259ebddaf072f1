"""Migrations mean what they meant when they ran: none imports a live module.

A migration that imported, say, ``sessions_app.search`` would change what it does every
time that module changed, and a database migrated today would differ from one migrated a
year ago. A migration may use Django and other migrations (frozen too), nothing else of
9plan.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = sorted(p for app in ("sessions_app", "mcp_bridge") for p in (ROOT / app / "migrations").glob("0*.py"))
PROJECT_PACKAGES = ("sessions_app", "mcp_bridge", "nineplan")


def _imported(path: Path) -> list[str]:
    """Every module the file imports, by statement or by import_module("...")."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append(node.args[0].value)
    return found


def _live(names: list[str]) -> list[str]:
    return [n for n in names if n.split(".")[0] in PROJECT_PACKAGES and ".migrations." not in n + "."]


def test_there_are_migrations_to_check():
    assert len(MIGRATIONS) >= 9


@pytest.mark.parametrize("path", MIGRATIONS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_a_migration_imports_no_live_module(path):
    live = _live(_imported(path))
    assert live == [], (
        f"{path.name} imports {live}: write the SQL or values out, or take them from an earlier migration"
    )


def test_the_check_sees_a_live_import(tmp_path):
    bad = tmp_path / "0099_bad.py"
    bad.write_text(
        "from importlib import import_module\n"
        "def run(apps, schema_editor):\n"
        "    from sessions_app import search\n"
        "    import_module('sessions_app.store.plan_counts')\n"
        "    import_module('sessions_app.migrations.0004_plan_counters')\n",
        encoding="utf-8",
    )
    names = _imported(bad)
    assert "sessions_app.search" in names and "sessions_app.store.plan_counts" in names
    assert _live(names) == ["sessions_app", "sessions_app.search", "sessions_app.store.plan_counts"]
