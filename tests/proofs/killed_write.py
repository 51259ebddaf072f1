"""A separate OS process that runs one 9plan service call and kills itself (SIGKILL) at a
chosen step of writing a plan file, for the tests of writes killed before their commit.

Run as ``python -m tests.proofs.killed_write STEP SERVICE KWARGS`` with DATABASE_URL and
NINEPLAN_SESSIONS_PATH pointing at the test's database and sessions folder. STEP is
``base`` (killed once the plan file's base is written, before the file is put in place) or
``file`` (killed once the file is in place, before the commit). SERVICE names a function of
``sessions_app.services`` and KWARGS is its arguments as JSON. Exits 3 if the call ends
without reaching the step.
"""

from __future__ import annotations

import json
import os
import signal
import sys

os.environ["DJANGO_SETTINGS_MODULE"] = "nineplan.settings"

import django  # noqa: E402

django.setup()

from sessions_app import planfiles, services  # noqa: E402
from sessions_app.planfiles import copies  # noqa: E402


def killed_after(call):
    def step(*args, **kwargs):
        result = call(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
        return result

    return step


def main() -> int:
    step, service, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if step == "base":
        copies.write_base = killed_after(copies.write_base)
    elif step == "file":
        planfiles.write_plan = killed_after(planfiles.write_plan)
    else:
        raise SystemExit(f"unknown step {step!r}")
    getattr(services, service)(**kwargs)
    return 3


if __name__ == "__main__":
    sys.exit(main())
