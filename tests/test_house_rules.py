"""Rules the code keeps so that a maintainer can read, change and upgrade it: no module
over 600 lines, other packages used through their public names only, and no C library
loaded by hand (docs/design.md, "Where things live")."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OWN_PACKAGES = {"sessions_app", "mcp_bridge", "nineplan", "tests", "bench", "validation"}
PRODUCT = ("sessions_app", "mcp_bridge", "nineplan", "manage.py")
MOST_LINES = 600
# Underscored names that are another package's documented interface: a Django model's
# _meta (the Model _meta API) and _state (documented on model instances), and a named
# tuple's methods, which carry the underscore only to stay clear of field names.
DOCUMENTED = {"_meta", "_state", "_replace", "_asdict", "_fields", "_make"}


def tracked(*patterns: str) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / line for line in listed.stdout.splitlines() if not line.startswith("bench/.peers/")]


def python_files() -> list[Path]:
    return [path for path in tracked("*.py") if path.exists()]


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def own_private_names(trees: dict[Path, ast.AST]) -> set[str]:
    """Every underscored name the project itself defines: functions, classes, attributes
    it assigns (self._x = ...) and module or class level names."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return {name for name in names if is_private(name)}


def foreign_private_uses(path: Path, tree: ast.AST, own: set[str]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top not in OWN_PACKAGES:
                if any(is_private(part) for part in node.module.split(".")):
                    found.append(f"{path.name}:{node.lineno} imports {node.module}")
                found += [
                    f"{path.name}:{node.lineno} imports {alias.name} from {node.module}"
                    for alias in node.names
                    if is_private(alias.name)
                ]
        elif isinstance(node, ast.Import):
            found += [
                f"{path.name}:{node.lineno} imports {alias.name}"
                for alias in node.names
                if alias.name.split(".")[0] not in OWN_PACKAGES and any(is_private(p) for p in alias.name.split("."))
            ]
        elif isinstance(node, ast.Attribute) and is_private(node.attr) and node.attr not in DOCUMENTED | own:
            found.append(f"{path.name}:{node.lineno} uses .{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
            and node.args[1].value not in DOCUMENTED | own
        ):
            found.append(f"{path.name}:{node.lineno} uses {node.func.id}(..., {node.args[1].value!r})")
    return found


def test_no_module_is_over_600_lines():
    long = []
    for path in tracked("*.py", "*.js"):
        if path.exists():
            lines = path.read_text(encoding="utf-8").count("\n")
            if lines > MOST_LINES:
                long.append(f"{path.relative_to(REPO)}: {lines} lines")
    assert long == []


def test_other_packages_are_used_through_their_public_names_only():
    trees = {path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path)) for path in python_files()}
    # 9plan's own code is held to the names it defines itself; the tests and benchmarks may
    # also use the ones their helpers define.
    product = {path: tree for path, tree in trees.items() if path.relative_to(REPO).parts[0] in PRODUCT}
    own = {PRODUCT: own_private_names(product), None: own_private_names(trees)}
    found = [
        use
        for path, tree in trees.items()
        for use in foreign_private_uses(path, tree, own[PRODUCT if path in product else None])
    ]
    assert found == []


def test_no_c_library_is_loaded_by_hand():
    loads = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                loads += [f"{path.name}:{node.lineno}" for m in modules if m.split(".")[0] in ("ctypes", "cffi")]
    assert loads == []


@pytest.mark.parametrize(
    "source,caught",
    [
        ("import asyncio\nasyncio._set_running_loop(None)\n", True),
        ("from mcp.server.mcpserver import MCPServer\nMCPServer('x')._tool_manager\n", True),
        ("from asyncio.events import _get_running_loop\n", True),
        ("import sys\ngetattr(sys.stderr, '_out', None)\n", True),
        ("from sessions_app.api.errors import _translate\n", False),
        ("class A:\n    def __init__(self):\n        self._kept = 1\n\nA()._kept\n", False),
        ("row._replace(a=1)\nPlan._meta.fields\n", False),
    ],
)
def test_the_public_names_rule_catches_what_it_should(source, caught):
    tree = ast.parse(source)
    assert bool(foreign_private_uses(Path("example.py"), tree, own_private_names({Path("example.py"): tree}))) is caught
