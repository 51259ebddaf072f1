"""A separate OS process that runs one 9plan service call and kills itself (SIGKILL) at a
chosen step of writing a plan file, for the tests of writes killed before their commit.

Run as ``python -m tests.proofs.killed_write STEP SERVICE KWARGS`` with DATABASE_URL and
NINEPLAN_SESSIONS_PATH pointing at the test's database and sessions folder. STEP is
``base`` (killed once the plan file's base is written, before the file is put in place) or
``file`` (killed once the file is in place, before the commit) or ``appended`` (as ``file``,
with a line another process would add to the file between its read and its replace added
while the base is written). SERVICE names a function of
``sessions_app.services`` and KWARGS is its arguments as JSON. Exits 3 if the call ends
without reaching the step.
"""

from __future__ import annotations

import json
import os
import signal
import sys

os.environ["DJANGO_SETTINGS_MODULE"] = "nineplan.settings"

import django

django.setup()

from sessions_app import planfiles, services  # noqa: E402
from sessions_app.planfiles import file_io  # noqa: E402


def killed_after(call):
    def step(*args, **kwargs):
        result = call(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
        return result

    return step


def adding_a_line_first(call):
    """``call``, that first adds a line at the end of the plan file it writes the base of."""

    def step(session_name, stem, text):
        path = planfiles.plan_path(session_name, stem)
        with open(path, "a") as file:
            file.write(f"{ADDED}\n")
        return call(session_name, stem, text)

    return step


ADDED = "Added while the killed write wrote"


def main() -> int:
    step, service, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if step == "base":
        file_io.write_base = killed_after(file_io.write_base)
    elif step in ("file", "appended"):
        planfiles.write_plan = killed_after(planfiles.write_plan)
        if step == "appended":
            file_io.write_base = adding_a_line_first(file_io.write_base)
    else:
        raise SystemExit(f"unknown step {step!r}")
    getattr(services, service)(**kwargs)
    return 3


if __name__ == "__main__":
    sys.exit(main())
