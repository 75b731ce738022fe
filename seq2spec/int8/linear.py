"""``Int8Linear``: a linear layer with int8 weights and int8 activations, each token quantised on its own.

PyTorch's int8 kernel (``kernels.int8_product``) quantises activations with one scale for the whole input tensor, so
a token's result would depend on the other tokens in the same forward: a verification forward over several drafted
tokens, or a batch whose other rows differ, would not reproduce the model's own ``generate``. ``Int8Linear`` makes
every token its own tensor as far as the kernel can tell: each input row is divided by its largest magnitude and two
constant input columns (+1 and -1, against zero weights) fix the tensor's range at [-1, 1], so the kernel's
activation scale is the same for every input; the row's own scale multiplies the result back. Each token's output
then depends on that token's input alone, bit for bit, however many tokens and rows share the forward.
"""

from __future__ import annotations

import torch
from torch import nn

from seq2spec.int8.kernels import int8_pack, int8_product

RANGE_COLUMNS = 2  # constant input columns (+1, -1) that pin the kernel's activation range
SMALLEST_SCALE = 1e-30  # an all-zero row divides by this instead of zero


class Int8Linear(nn.Module):
    """``nn.Linear``'s function with int8 weights (one scale per output channel) and int8 activations (one scale
    per token): see the module docstring. CPU only."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        weight = linear.weight.detach().float().cpu()
        padded = torch.cat([weight, weight.new_zeros(weight.shape[0], RANGE_COLUMNS)], dim=1)
        self._packed = int8_pack(padded)
        bias = None if linear.bias is None else linear.bias.detach().float().cpu().clone()
        self.register_buffer("bias", bias)
        self.register_buffer("_range", torch.tensor([1.0, -1.0]), persistent=False)

    @property
    def weight(self) -> torch.Tensor:
        """The weight's shape and dtype (int8) without its values, which live in the kernel's packed form; models
        that check a layer's weight dtype (T5's feed-forward does) read it here."""
        return torch.empty(self.out_features, self.in_features, dtype=torch.int8, device="meta")

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if hidden.device.type != "cpu":
            raise RuntimeError(f"int8 layers run on a CPU; the input is on {hidden.device}")
        rows = hidden.reshape(-1, self.in_features).float()
        # each row's largest magnitude; two reductions read the rows without writing an ``abs`` copy of them
        scale = torch.maximum(rows.amax(dim=-1, keepdim=True), rows.amin(dim=-1, keepdim=True).neg_())
        scale.clamp_(min=SMALLEST_SCALE)
        normalised = rows.new_empty(rows.shape[0], self.in_features + RANGE_COLUMNS)
        normalised[:, self.in_features :] = self._range
        torch.div(rows, scale, out=normalised[:, : self.in_features])
        product = int8_product(normalised, self._packed)
        output = product.mul_(scale) if self.bias is None else torch.addcmul(self.bias, product, scale)
        return output.reshape(*hidden.shape[:-1], self.out_features).to(hidden.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
