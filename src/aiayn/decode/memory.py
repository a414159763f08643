"""Let decoding steps reuse freed memory instead of faulting in fresh pages.

Every decoding step allocates and frees the same tensors: layer outputs, the logits of
rows x vocabulary (4 MiB at beam 4, batch 32, 8,000 pieces). glibc's ``malloc`` serves large
requests with fresh ``mmap`` mappings and returns the top of the heap to the kernel once
enough of it is free, so those buffers keep coming back as new pages, and every new page
faults when it is first written. Measured on a `small` model, beam 4, batch 32, int8: 8,000 to
18,000 page faults per batch and ~10% of its time; after the two thresholds below are raised,
0 to 30 (``benchmarks/decode_speed.py``; float32 gains less, ~4%). This is the usual advice for
PyTorch inference on CPU (a caching allocator such as jemalloc or tcmalloc), done with glibc's
own settings.

The change is process-wide: requests below 64 MiB come from the heap, and up to 1 GiB of freed
heap stays with the process for reuse. ``aiayn.load`` and the ``translate``, ``evaluate`` and
``generate`` commands apply it; set ``AIAYN_KEEP_MALLOC=1`` in the environment to leave the
allocator alone. Elsewhere than glibc (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc <malloc.h>
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 1 << 30

_applied: bool | None = None


def reuse_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds once per process; True when they are set."""
    global _applied
    if _applied is None:
        _applied = False
        if sys.platform.startswith("linux") and os.environ.get("AIAYN_KEEP_MALLOC") != "1":
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                mallopt = libc.mallopt
            except (OSError, AttributeError):  # not glibc
                return False
            _applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                            and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _applied
