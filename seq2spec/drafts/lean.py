"""What the lean draft parts (``lean_t5``, ``lean_t5_encoder``, ``lean_whisper``, ``graphed_whisper``) share: how far
their probe may stray from transformers, and their check through ``seq2spec.decoding.fast.checked``.

A lean part agrees with transformers to rounding, not bit for bit, so its probe measures a gap (log-probabilities or
outputs, relative to their scale) and the part is used when that gap is within the tolerance of the model's dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

import torch
from transformers import PreTrainedModel

from seq2spec.decoding.fast.checked import Within, check

# Largest probe gap still taken for rounding. Half-precision kernels may round a fused product differently from
# three separate ones; a real mistake (a missing position bias, a wrong output scale or norm epsilon) shows as 0.1
# or more.
PROBE_TOLERANCE = {torch.float32: 1e-3, torch.float16: 2e-2, torch.bfloat16: 5e-2}


def probe_tolerance(dtype: torch.dtype) -> float:
    """``PROBE_TOLERANCE`` of ``dtype`` (float32's for any other)."""
    return PROBE_TOLERANCE.get(dtype, PROBE_TOLERANCE[torch.float32])


class _LeanPart(Protocol):
    def probe_difference(self, model: PreTrainedModel) -> float: ...


Part = TypeVar("Part", bound=_LeanPart)


def checked_lean(build: Callable[..., Part], model: PreTrainedModel, tolerance: float, *, int8: bool) -> Part | None:
    """``build(model, int8=int8)`` if the float version ``build(model)`` reproduces transformers on its probe
    (``probe_difference``) within ``tolerance``, else None (the draft then keeps transformers' modules)."""
    return check(
        f"{getattr(build, '__name__', build)} for {type(model).__name__}",
        lambda: build(model),
        lambda lean: lean.probe_difference(model),
        Within(tolerance),
        then=(lambda _: build(model, int8=True)) if int8 else None,
    )
