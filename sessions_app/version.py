"""9plan's version, written in one place: pyproject.toml.

In a checkout it is read from that file beside the packages; installed, from the package's
metadata, which the build took from the same file. Both are cheap (no Django, no SDK), so
`manage.py mcp` can name it in its `initialize` answer without a slower start.
"""

from __future__ import annotations

import functools
from pathlib import Path

DISTRIBUTION = "9plan"
# Beside the packages in a checkout; an installed package has none there.
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


@functools.cache
def version() -> str:
    """The version of this 9plan, e.g. "0.2.0"."""
    try:
        text = PYPROJECT.read_text(encoding="utf-8")
    except OSError:
        text = None
    if text is not None:
        import tomllib

        project = tomllib.loads(text).get("project", {})
        # Another project's file (a parent folder that happens to hold one) says nothing of 9plan.
        if project.get("name") == DISTRIBUTION:
            return str(project["version"])
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"
