"""Process-level settings that make CPU training faster without changing results."""
from __future__ import annotations

import ctypes
import ctypes.util
import sys


def keep_freed_memory(every_size: bool = False) -> bool:
    """Ask glibc to serve tensors of up to 32 MB (every_size: of any size) from its heap and not hand freed memory
    back at once.

    By default every allocation above 128 KB is a fresh mmap whose pages fault in on first touch; a full-batch
    epoch allocates hundreds of such (N x hidden) tensors, and on small VMs the page faults cost ~10% of the
    epoch. 32 MB is the most glibc's mmap threshold takes; every_size turns mmap off altogether (DBLP's GAT
    activations, 26k x 512 floats, are 53 MB: page faults were a third of its epoch). Full-batch training only:
    there the same few shapes come back every epoch and freed blocks are reused whole. Returns False where this
    is not glibc.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold, m_mmap_max = -1, -3, -4
        ok = bool(libc.mallopt(m_mmap_threshold, 32 << 20)) and bool(libc.mallopt(m_trim_threshold, 1 << 30))
        return ok and (not every_size or bool(libc.mallopt(m_mmap_max, 0)))
    except (OSError, AttributeError):
        return False
