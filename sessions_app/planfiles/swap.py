"""Putting a new file in an old one's place by swapping the two names in one step (Linux's
``renameat2`` with ``RENAME_EXCHANGE``), where the system has it.

Readers see the old file or the new one either way. What the swap saves is ext4's
``auto_da_alloc``: a rename over an existing file makes the kernel start writing the new
file's data out before the rename returns, 0.3-0.9 ms on a quiet disk and several on a busy
one, for a copy whose database commit is not fsynced either. Swapped, the old file's data
moves to the temporary name and is unlinked (docs/design.md, "Plan files").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import sys

RENAME_EXCHANGE = 2
# Where the swap is not to be had, the caller replaces the file as before: a file system
# without it (EINVAL, ENOTSUP), a kernel without the call (ENOSYS), or the old file gone
# since it was looked at (ENOENT).
_FALL_BACK = {errno.EINVAL, errno.ENOSYS, errno.ENOENT, errno.EXDEV, getattr(errno, "ENOTSUP", errno.EINVAL)}


def _renameat2():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        call = libc.renameat2
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


_call = _renameat2()


def swap_in(folder: int, new: str, old: str) -> bool:
    """Swaps the names ``new`` and ``old`` inside ``folder`` (a descriptor); True if done, so
    that ``new`` now names the old file. False where the swap is not to be had: nothing
    moved, and the caller replaces ``old`` instead. Any other failure raises OSError."""
    if _call is None:
        return False
    if _call(folder, os.fsencode(new), folder, os.fsencode(old), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _FALL_BACK:
        return False
    raise OSError(code, os.strerror(code), old)
