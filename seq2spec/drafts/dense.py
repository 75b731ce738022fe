"""Linear layers for lean draft steps: the model's own weights, or int8 copies of them on a CPU.

A draft's decoder step on a CPU is bound by memory traffic, not arithmetic: its vocabulary head alone reads tens of
megabytes of float32 weights per step. ``Dense.int8`` keeps an int8 copy and multiplies through ``seq2spec.int8``'s
kernels (the same packing and activation range as the int8 mode), about ten times faster for a draft's head on a
two-core CPU. A small product gains nothing from it: quantising the activations costs about as much as a float32
product of under ``INT8_MIN_MACS`` multiply-adds (measured: a 128 x 128 layer on one token takes 4 us in float32 and
10 us in int8), so those run in float32 with the model's own weights. A draft's logits only choose candidates; the
big model, in its own precision, decides every output token, so quantising the draft changes speed and acceptance,
never the output.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seq2spec.int8 import int8_pack, int8_product

INT8_MIN_MACS = 250_000  # smaller products run in float32 (see the module docstring)


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
        return int8_product(hidden.float().contiguous(), self.packed)
