"""int8 mode for the CPU: a model's linear layers with int8 weights and int8 activations, one scale per token.

``quantize_int8(model)`` replaces every ``nn.Linear`` of a model with an ``Int8Linear``: int8 weights with one scale
per output channel, activations quantised on the fly with one scale per token (per row of the input), products
accumulated in int32 by PyTorch's own quantised kernels (fbgemm / x86). On a two-core CPU this makes Whisper base's
vocabulary head 5 to 13 times faster than float32, because that head is bound by reading its weights from memory.

Why one scale per token: PyTorch's dynamic quantisation picks one activation scale for the whole input tensor, so
a token's numbers would depend on the other tokens and rows of the same call. Speculative verification feeds
several tokens per call where ``generate`` feeds one; with a shared scale the two would see different numbers and
could choose different tokens. ``Int8Linear`` divides each row by its own largest magnitude and adds two fixed
bound rows, so the kernel's scale is always the same and every row is computed exactly as it would be alone
(checked bit for bit in the tests). An int8 model therefore gives the same tokens through seq2spec as through its
own ``generate``, at any batch size.

The weights are quantised once, at conversion; the packed weights are not parameters (the model can no longer be
saved or moved to another device; reload it in float32 for that).
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

INT8 = "int8"


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


class Int8Linear(nn.Module):
    """An ``nn.Linear`` computed with int8 weights and per-token int8 activations; see the module docstring."""

    def __init__(self, linear: nn.Linear, *, per_token: bool = True) -> None:
        super().__init__()
        self.per_token = per_token
        if linear.weight.device.type != "cpu":
            raise ValueError("int8 layers run on the CPU only; on a GPU use float16 or bfloat16")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        bias = None if linear.bias is None else linear.bias.detach().float().clone()
        # per tensor: the bias goes into the kernel; per token it is added after each row's rescaling
        self._packed = int8_pack(linear.weight, None if per_token else bias)
        # the int8 weights themselves, for code that inspects a layer's weight (its shape, its dtype)
        self.register_buffer("weight", torch.ops.quantized.linear_unpack(self._packed)[0].int_repr(), persistent=False)
        self.register_buffer("bias", bias)
        self.register_buffer("_bounds", torch.tensor([[-1.0], [1.0]]).expand(2, self.in_features).contiguous())

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        dtype = hidden.dtype
        flat = hidden.reshape(-1, self.in_features).float()
        if not self.per_token:
            output = torch.ops.quantized.linear_dynamic(flat.contiguous(), self._packed, True)
            return output.reshape(*hidden.shape[:-1], self.out_features).to(dtype)
        scale = flat.abs().amax(dim=-1, keepdim=True).clamp_(min=1e-12)
        # every row scaled into [-1, 1] and both bounds present: the kernel's activation scale never changes
        unit = torch.cat([flat / scale, self._bounds])
        output = torch.ops.quantized.linear_dynamic(unit, self._packed, True)[: flat.shape[0]] * scale
        if self.bias is not None:
            output = output + self.bias
        return output.reshape(*hidden.shape[:-1], self.out_features).to(dtype)

    def extra_repr(self) -> str:
        scales = "per token" if self.per_token else "per call"
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 activations {scales}"


def quantize_int8(model: nn.Module) -> nn.Module:
    """Replace every ``nn.Linear`` of ``model`` (in place) with an ``Int8Linear``; returns the model.

    An encoder-decoder's encoder layers quantise their activations with one scale per call (about a fifth faster on
    Whisper's encoder): the encoder runs once per batch, the same way for ``generate`` and for seq2spec, so only
    the decoder, which seq2spec feeds differently, needs a scale per token. The model must be on the CPU in
    float32. A draft that shares modules with the big model (the shipped Whisper draft) should be built before the
    big model is converted.
    """
    parameter = next(model.parameters(), None)
    if parameter is not None and parameter.device.type != "cpu":
        raise ValueError(f"int8 mode runs on the CPU only, but the model is on {parameter.device}; use float16 there")
    if not int8_available():
        raise RuntimeError("this PyTorch build has no int8 CPU kernels (x86/fbgemm quantised engine)")
    targets = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is nn.Linear
    ]
    encoder_decoder = getattr(getattr(model, "config", None), "is_encoder_decoder", False)
    encoder = model.get_encoder() if encoder_decoder else None
    encoder_linears = {id(module) for module in encoder.modules()} if encoder is not None else set()
    converted: dict[int, Int8Linear] = {}
    for parent, name, child in targets:
        if id(child) not in converted:  # a module used in two places is converted once
            converted[id(child)] = Int8Linear(child, per_token=id(child) not in encoder_linears)
        setattr(parent, name, converted[id(child)])
    model.seq2spec_int8 = True
    return model


def is_int8(model: nn.Module | None) -> bool:
    """Whether ``quantize_int8`` converted ``model``."""
    return bool(getattr(model, "seq2spec_int8", False))
