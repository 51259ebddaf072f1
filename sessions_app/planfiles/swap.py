"""Putting a new file in an old one's place by swapping the two names in one step (Linux's
``renameat2`` with ``RENAME_EXCHANGE``), where the system has it.

Readers see the old file or the new one either way. What the swap saves is ext4's
``auto_da_alloc``: a rename over an existing file makes the kernel start writing the new
file's data out before the rename returns, 0.3-0.9 ms on a quiet disk and several on a busy
one, for a copy whose database commit is not fsynced either. Swapped, the old file's data
moves to the temporary name and is unlinked (docs/design.md, "Plan files").
"""

from __future__ import annotations

import os
import sys
from functools import cache

RENAME_EXCHANGE = 2


@cache
def _renameat2():
    """libc's renameat2, found on the first write (ctypes costs a server's start 5-10 ms)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        # The interpreter's own symbols, libc's among them: no library search (which would
        # start a process) at import.
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


def swap_in(folder: int, new: str, old: str) -> bool:
    """Swaps the names ``new`` and ``old`` inside ``folder`` (a descriptor); True if done, so
    that ``new`` now names the old file. False if not, and then nothing moved (the call
    either swaps both names or neither): a file system without the swap, a kernel without
    the call, the old file gone since it was looked at, or any other failure, which the
    caller's plain replace then meets and reports in its own words."""
    call = _renameat2()
    if call is None:
        return False
    return call(folder, os.fsencode(new), folder, os.fsencode(old), RENAME_EXCHANGE) == 0
