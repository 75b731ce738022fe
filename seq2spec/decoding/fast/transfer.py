"""Host numbers to the device without waiting for it.

``torch.tensor(values, device="cuda")`` copies from pageable host memory, which makes the host wait until the GPU
has finished all queued work: one stall per call. The loop builds small index tensors from host-side lists every
round (rows to keep, cache shifts, accepted counts), so on a GPU it copies them from pinned memory, asynchronously:
the CUDA caching host allocator keeps the pinned block until the copy has run.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def to_device(values: Sequence[int], device: torch.device | str, dtype: torch.dtype = torch.long) -> torch.Tensor:
    """``torch.tensor(values, dtype=dtype, device=device)``, without a host synchronisation on CUDA."""
    device = torch.device(device)
    host = torch.tensor(values, dtype=dtype)
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)
