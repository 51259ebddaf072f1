"""9plan as an installable package: the wheel, and the `9plan` command it installs.

The slow test builds the wheel from a copy of the sources, installs it into a fresh
virtual environment outside the checkout, and runs `9plan mcp` and `9plan serve` from an
unrelated directory, as someone who never cloned the repository would.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from mcp import Client, StdioServerParameters

import nineplan
from tests.conftest import REPO
from tests.proofs.test_stdio_e2e import TEE, assert_only_json_rpc

# One worker runs the whole module under pytest-xdist (`--dist loadgroup`), so the wheel that
# the module-scoped `installed` fixture builds and installs is made once, not once a worker.
pytestmark = pytest.mark.xdist_group("packaging")

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE_ROOTS = ("nineplan", "sessions_app", "mcp_bridge")
# What a build needs from the checkout; nothing is built in the checkout itself.
SOURCES = ("pyproject.toml", "README.md", "templates", *PACKAGE_ROOTS)


def requirement_lines(path: Path) -> list[str]:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            lines.append(line)
    return lines


def test_the_package_pins_the_same_dependencies_as_requirements_txt():
    assert sorted(PYPROJECT["project"]["dependencies"]) == sorted(requirement_lines(REPO / "requirements.txt"))
    for requirement in PYPROJECT["project"]["dependencies"]:
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+(\[[a-z,]+\])?==[0-9][A-Za-z0-9.]*", requirement), requirement


def test_the_package_lists_every_python_package_and_one_command():
    found = {
        ".".join(init.parent.relative_to(REPO).parts)
        for root in PACKAGE_ROOTS
        for init in (REPO / root).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == found | {"nineplan.templates"}
    assert PYPROJECT["project"]["scripts"] == {"9plan": "nineplan.cli:main"}
    assert PYPROJECT["project"]["version"] == nineplan.__version__


@pytest.mark.slow
def test_the_version_option_names_9plan(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from nineplan.cli import main; sys.argv = ['9plan', '--version']; main()"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == f"9plan {nineplan.__version__}\n"


@pytest.mark.anyio
async def test_the_mcp_server_and_the_openapi_schema_name_the_package_version(db):
    """One version, pyproject.toml's: `9plan --version`, the MCP serverInfo and the API's schema."""
    from django.test import Client as WebClient

    from mcp_bridge.server import build_server

    wanted = PYPROJECT["project"]["version"]
    async with Client(build_server()) as client:
        assert (client.server_info.name, client.server_info.version) == ("9plan", wanted)
    schema = await sync_to_async(lambda: WebClient().get("/api/schema/?format=json").json())()
    assert schema["info"]["version"] == wanted


# --- the built wheel, installed outside the checkout ---------------------------------------


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """A wheel built from a copy of the sources, installed into a fresh virtual environment
    (its dependencies from the package index, or pip's cache)."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, source / name)
    run = lambda *args, **kw: subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)  # noqa: E731
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(root / "dist"), str(source))
    assert built.returncode == 0, built.stderr
    (wheel,) = (root / "dist").glob(f"9plan-{PYPROJECT['project']['version']}-*.whl")
    venv = root / "venv"
    made = run(sys.executable, "-m", "venv", str(venv))
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    added = run(str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel))
    assert added.returncode == 0, added.stderr
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return {"wheel": wheel, "venv": venv, "python": python, "command": venv / "bin" / "9plan", "cwd": elsewhere}


def user_env(data_dir: Path) -> dict[str, str]:
    """A user's shell: nothing of the checkout or the test settings, 9plan's data in ``data_dir``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "DJANGO_", "NINEPLAN_", "VIRTUAL_ENV"))
        and k not in ("PYTHONPATH", "DATABASE_URL")
    }
    env["NINEPLAN_SESSIONS_PATH"] = str(data_dir / "sessions")
    env["DATABASE_URL"] = f"sqlite:///{data_dir / '9plan.sqlite3'}"
    env["NINEPLAN_LOG_LEVEL"] = "info"
    return env


@pytest.mark.slow
def test_the_wheel_carries_the_templates_static_files_and_migrations(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for root in PACKAGE_ROOTS:
        for path in (REPO / root).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                assert path.relative_to(REPO).as_posix() in names
    for path in (REPO / "templates").rglob("*.html"):
        assert f"nineplan/templates/{path.relative_to(REPO / 'templates').as_posix()}" in names
    assert "sessions_app/migrations/0001_initial.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "9plan = nineplan.cli:main" in zipfile.ZipFile(installed["wheel"]).read(entry_points).decode()
    # Nothing of the checkout rides along.
    assert not any(n.startswith(("tests/", "bench/", "validation/", "manage.py")) for n in names)


@pytest.mark.slow
def test_the_installed_package_is_imported_from_the_virtual_environment(installed, tmp_path):
    where = subprocess.run(
        [str(installed["python"]), "-c", "import nineplan, sessions_app; print(nineplan.__file__)"],
        cwd=installed["cwd"],
        env=user_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed["venv"])
    # No pyproject.toml beside the installed packages: the version comes from the metadata.
    named = subprocess.run(
        [str(installed["command"]), "--version"],
        cwd=installed["cwd"],
        env=user_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert named.stdout == f"9plan {PYPROJECT['project']['version']}\n", named.stderr


@pytest.mark.slow
@pytest.mark.anyio
async def test_9plan_mcp_answers_over_stdio_from_any_directory(installed, tmp_path):
    stdout_copy, stderr_log = tmp_path / "stdout.jsonl", tmp_path / "stderr.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", TEE, str(stdout_copy), str(stderr_log), str(installed["command"]), "mcp"],
        env=user_env(tmp_path / "data"),
        cwd=str(installed["cwd"]),
    )
    async with Client(params, read_timeout_seconds=120) as client:
        assert client.server_info.name == "9plan"
        result = await client.call_tool("9plan_session_create", {"task_description": "Build a note keeper"})
        assert not result.is_error, result.content
        name = result.structured_content["session_name"]
        added = await client.call_tool(
            "9plan_queue_add",
            {
                "context": "A note keeper",
                "goal": "Store notes",
                "approach": "A JSON file",
                "success_criteria": "Tests pass",
            },
        )
        assert not added.is_error and added.structured_content["session_name"] == name
    assert_only_json_rpc(stdout_copy)
    # The data went where the environment said, not into the directory it ran from.
    plan_id = added.structured_content["plan_id"]
    assert (tmp_path / "data" / "sessions" / name / "plans" / f"{plan_id}.txt").is_file()
    assert (tmp_path / "data" / "9plan.sqlite3").is_file()
    assert list(installed["cwd"].iterdir()) == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode("utf-8")


@pytest.mark.slow
def test_9plan_serve_serves_the_admin_and_its_static_files_from_the_data_directory(installed, tmp_path):
    port = free_port()
    data = tmp_path / "data"
    log = open(tmp_path / "serve.log", "w+", encoding="utf-8")
    server = subprocess.Popen(
        [str(installed["command"]), "serve", "--port", str(port), "--workers", "1"],
        cwd=installed["cwd"],
        env=user_env(data),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, page = fetch(f"http://127.0.0.1:{port}/admin/login/")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"9plan serve did not answer:\n{log.read()}")
                time.sleep(0.3)
        assert status == 200
        assert 'name="username"' in page and 'name="password"' in page
        # The project's own admin frame (templates/ in the checkout) came with the wheel.
        assert "/static/sessions_app/admin.css" in page
        status, css = fetch(f"http://127.0.0.1:{port}/static/sessions_app/admin.css")
        assert status == 200 and css == (REPO / "sessions_app/static/sessions_app/admin.css").read_text(
            encoding="utf-8"
        )
        assert (data / "static" / "sessions_app" / "admin.css").is_file()
        assert (data / "9plan.sqlite3").is_file()
        assert list(installed["cwd"].iterdir()) == []
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
        log.close()
    assert "9plan admin: http://127.0.0.1:" in (tmp_path / "serve.log").read_text(encoding="utf-8")
