"""9plan's version, read from pyproject.toml (sessions_app/version.py)."""

from __future__ import annotations

import tomllib

from sessions_app import version


def test_the_version_is_the_one_pyproject_toml_names():
    project = tomllib.loads(version.PYPROJECT.read_text(encoding="utf-8"))["project"]
    assert project["name"] == version.DISTRIBUTION
    assert version.version() == project["version"]


def test_another_projects_file_says_nothing_of_9plan(tmp_path, monkeypatch):
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "someone-else"\nversion = "9.9.9"\n', encoding="utf-8")
    monkeypatch.setattr(version, "PYPROJECT", other)
    version.version.cache_clear()
    try:
        found = version.version()
    finally:
        version.version.cache_clear()
    assert found != "9.9.9"  # the installed package's metadata, or "unknown"
