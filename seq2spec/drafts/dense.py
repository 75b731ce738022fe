"""Linear layers for lean draft steps: the model's own weights, or int8 copies of them on a CPU.

A draft's decoder step on a CPU is bound by memory traffic, not arithmetic: its vocabulary head alone reads tens of
megabytes of float32 weights per step. ``Dense.int8`` keeps an int8 copy (one scale per output row) and multiplies
with dynamically quantised activations through PyTorch's own quantised kernels (fbgemm / x86), about ten times
faster for a draft's head on a two-core CPU. A draft's logits only choose candidates; the big model, in its own
precision, decides every output token, so quantising the draft changes speed and acceptance, never the output.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seq2spec.int8 import int8_available, int8_pack

__all__ = ["Dense", "int8_available"]


class Dense:
    """``x @ weight.T + bias``, in the weight's precision or (``int8``) with int8 weights and activations."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, *, int8: bool = False) -> None:
        self.out_features, self.in_features = weight.shape
        self.int8 = int8
        if int8:
            self.weight, self.bias = None, None
            self.packed = int8_pack(weight, bias)
        else:
            self.weight, self.bias, self.packed = weight, bias, None

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.packed is None:
            return F.linear(hidden.to(self.weight.dtype), self.weight, self.bias)
        return torch.ops.quantized.linear_dynamic(hidden.float().contiguous(), self.packed, True)
