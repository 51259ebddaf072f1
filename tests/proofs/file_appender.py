"""A separate OS process that appends numbered lines to a plan file at a short interval, as
an agent's ``echo … >> plan.txt`` would: each line is one write through a descriptor opened
by the file's path (append mode, never created) and closed again. No Django: it only writes.

Run as ``python tests/proofs/file_appender.py PATH INTERVAL_SECONDS PREFIX``. Prints
``ready`` once its first line is in, appends ``PREFIX 0``, ``PREFIX 1``, … until it gets
SIGTERM (never in the middle of a line), then prints how many lines it appended and exits 0.
A path found missing (a write that left no file at the path for a moment) ends it with an
error.
"""

from __future__ import annotations

import os
import signal
import sys
import time


def main() -> int:
    path, interval, prefix = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    stop = False

    def stopped(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, stopped)
    count = 0
    while not stop:
        line = f"{prefix} {count}\n".encode()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        count += 1
        if count == 1:
            print("ready", flush=True)
        time.sleep(interval)
    print(count, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
