"""Settings for the test suite: 9plan's own, with a private data directory per run.

The environment is set before nineplan.settings reads it, so a test run never touches a
user's real database, secret key or plan files.
"""

import os
import tempfile
from pathlib import Path

_run_dir = tempfile.mkdtemp(prefix="nineplan-tests-")
os.environ["NINEPLAN_SESSIONS_PATH"] = os.path.join(_run_dir, "sessions")
os.environ.setdefault("NINEPLAN_LOG_LEVEL", "warn")
os.environ.setdefault("DJANGO_SECRET_KEY", "tests-only-not-a-secret")

from nineplan.settings import *  # noqa: E402, F403

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    # One test database per run: two runs on one server (CI and a developer, say) would
    # otherwise drop each other's database in the middle of the suite.
    DATABASES["default"]["TEST"]["NAME"] += f"_{os.getpid()}"  # noqa: F405

# Static files are served by the test server's own handler; an empty collected folder
# keeps whitenoise from warning on every request that it has none.
STATIC_ROOT = Path(_run_dir) / "staticfiles"  # a Path, as nineplan.settings has it
os.makedirs(STATIC_ROOT, exist_ok=True)
