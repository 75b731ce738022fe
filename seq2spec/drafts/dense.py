"""Linear layers for lean draft steps: the model's own weights, or int8 copies of them on a CPU.

A draft's decoder step on a CPU is bound by memory traffic, not arithmetic: its vocabulary head alone reads tens of
megabytes of float32 weights per step. ``Dense.int8`` keeps an int8 copy (one scale per output row) and multiplies
with dynamically quantised activations through PyTorch's own quantised kernels (fbgemm / x86), about ten times
faster for a draft's head on a two-core CPU. A small product gains nothing from it: quantising the activations
costs about as much as a float32 product of under ``INT8_MIN_MACS`` multiply-adds (measured: a 128 x 128 layer on
one token takes 4 us in float32 and 10 us in int8), so those run in float32 with the model's own weights. A draft's
logits only choose candidates; the big model, in its own precision, decides every output token, so quantising the
draft changes speed and acceptance, never the output.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Protocol, TypeVar

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

logger = logging.getLogger(__name__)

INT8_MIN_MACS = 250_000  # smaller products run in float32 (see the module docstring)


def int8_available(device: torch.device | str = "cpu") -> bool:
    """Whether int8 quantised linear layers run on ``device`` (PyTorch's x86 or fbgemm engine: CPUs only)."""
    if torch.device(device).type != "cpu":
        return False
    engines = torch.backends.quantized.supported_engines
    return "x86" in engines or "fbgemm" in engines


def int8_pack(weight: torch.Tensor, bias: torch.Tensor | None = None) -> object:
    """PyTorch's packed int8 weight (symmetric, one scale per output row) for ``torch.ops.quantized.linear_dynamic``."""
    weight = weight.detach().float().cpu()
    scales = (weight.abs().amax(dim=1).clamp(min=1e-8) / 127).double()
    zero_points = torch.zeros(weight.shape[0], dtype=torch.long)
    with warnings.catch_warnings():  # PyTorch marks its quantised-tensor constructors as deprecated
        warnings.simplefilter("ignore")
        quantized = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
        return torch.ops.quantized.linear_prepack(quantized, None if bias is None else bias.detach().float().cpu())


class Dense:
    """``x @ weight.T + bias``, in the weight's precision or (``int8``) with int8 weights and activations for
    products of at least ``INT8_MIN_MACS`` multiply-adds."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, *, int8: bool = False) -> None:
        self.weight, self.bias = weight, bias
        self.packed = int8_pack(weight, bias) if int8 else None
        self.int8_from_rows = max(1, -(-INT8_MIN_MACS // weight.numel()))  # rows from which int8 pays

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.packed is None or hidden.numel() < self.int8_from_rows * hidden.shape[-1]:
            return F.linear(hidden.to(self.weight.dtype), self.weight, self.bias)
        return torch.ops.quantized.linear_dynamic(hidden.float().contiguous(), self.packed, True)


class _LeanStep(Protocol):
    def probe_difference(self, model: PreTrainedModel) -> float: ...


Step = TypeVar("Step", bound=_LeanStep)


def checked_lean_step(
    build: Callable[..., Step], model: PreTrainedModel, tolerance: float, *, int8: bool
) -> Step | None:
    """``build(model, int8=int8)`` if the float version ``build(model)`` (a lean step, or a lean encoder) reproduces
    transformers on its probe (``probe_difference``) within ``tolerance``, else None (the draft then keeps
    transformers' modules)."""
    try:
        lean = build(model)
        difference = lean.probe_difference(model)
        if int8:
            lean = build(model, int8=True)
    except Exception as error:  # noqa: BLE001 - any mismatch of structure means: keep transformers' forward
        logger.info("%s unavailable for %s: %s", getattr(build, "__name__", build), type(model).__name__, error)
        return None
    if difference > tolerance:
        logger.info("%s disagrees with transformers by %.2e; not used", getattr(build, "__name__", build), difference)
        return None
    return lean
