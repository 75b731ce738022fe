"""Keep memory the process frees for its next allocations, instead of handing it back to the system (Linux, glibc).

A CPU forward allocates and frees the same large buffers every call (an encoder's activations, int8 copies of them,
attention keys and values). By default glibc serves blocks above a threshold with fresh ``mmap`` pages and returns
freed heap memory to the system, so the next call touches new pages and the kernel zeroes each one first: measured
on Whisper base in int8 mode at batch 8 on a two-core CPU, about 0.6 million page faults per encoder call, which made
the encoder about 40% slower inside one decoding loop than alone. Raising glibc's mmap and trim thresholds keeps the
freed blocks in the heap for reuse. The cost is that the process keeps its peak heap size until it exits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
LARGEST_BLOCK_FROM_HEAP = 2**30  # blocks up to 1 GiB come from the heap, not from mmap
KEEP_FREED = 2**31 - 1  # free memory at the top of the heap kept up to 2 GiB


def retain_freed_memory() -> bool:
    """Tell glibc's allocator to keep freed memory for reuse (process-wide). Returns whether it applied: False
    on other platforms and C libraries, where nothing changes. The ``seq2spec`` commands call it at start-up."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return False
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST_BLOCK_FROM_HEAP)) and bool(mallopt(M_TRIM_THRESHOLD, KEEP_FREED))
