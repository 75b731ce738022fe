"""int8 mode on a CPU: every Linear layer with int8 weights and int8 activations, each token quantised on its own.

On a CPU a small model's matrix products are bound by memory traffic; int8 weights are a quarter of float32's, and
PyTorch's own quantised kernels (fbgemm / x86, ``torch.ops.quantized.linear_dynamic``) multiply int8 by int8 with
exact integer sums. Those kernels quantise activations with one scale for the whole input tensor, so a token's result
would depend on the other tokens in the same forward: a verification forward over several drafted tokens, or a batch
whose other rows differ, would not reproduce the model's own ``generate``. ``Int8Linear`` makes every token its own
tensor as far as the kernel can tell: each input row is divided by its largest magnitude and two constant input
columns (+1 and -1, against zero weights) fix the tensor's range at [-1, 1], so the kernel's activation scale is the
same for every input; the row's own scale multiplies the result back. Each token's output then depends on that
token's input alone, bit for bit, however many tokens and rows share the forward; speculative decoding of an int8
model therefore gives exactly that int8 model's greedy ``generate`` output.

Weights are symmetric int8 with one scale per output channel. Attention, normalisation and embeddings stay in
float32. ``quantize_int8`` converts a model in place; the weights cannot go back to float32 afterwards.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn
from transformers import PreTrainedModel

from seq2spec.drafts.dense import int8_available, int8_pack
from seq2spec.exact_attention import use_float64_decoder_attention

INT8 = "int8"
RANGE_COLUMNS = 2  # constant input columns (+1, -1) that pin the kernel's activation range
SMALLEST_SCALE = 1e-30  # an all-zero row divides by this instead of zero


def cpu_has_vnni() -> bool:
    """Whether this CPU multiplies int8 with VNNI instructions (AVX512-VNNI or AVX-VNNI), which sum products in 32
    bits; without them fbgemm sums pairs in 16 bits and full-range 8-bit activations could saturate (Linux only: on
    other systems the answer is no)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            flags = next((line for line in handle if line.startswith("flags")), "")
    except OSError:
        return False
    return bool({"avx512_vnni", "avx_vnni"} & set(flags.split()))


# 8-bit activations where VNNI makes them safe; 7 bits (PyTorch's choice for x86 without VNNI) elsewhere
REDUCE_RANGE = not cpu_has_vnni()


def is_int8_dtype(dtype: object) -> bool:
    """True for ``"int8"`` and ``torch.int8``: the int8 mode, not a tensor dtype to cast weights to."""
    return dtype == INT8 or dtype is torch.int8


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
        product = torch.ops.quantized.linear_dynamic(normalised, self._packed, REDUCE_RANGE)
        output = product.mul_(scale) if self.bias is None else torch.addcmul(self.bias, product, scale)
        return output.reshape(*hidden.shape[:-1], self.out_features).to(hidden.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def quantize_int8(model: nn.Module, *, exact_attention: bool = True) -> nn.Module:
    """Replace every ``nn.Linear`` inside ``model`` with an ``Int8Linear``, in place; returns ``model``.

    The model must be on a CPU (PyTorch's int8 kernels run there only). Its float weights are released. With
    ``exact_attention`` a transformers model's decoder attention switches to ``seq2spec.exact_attention`` (float64
    sums), so that its ``generate`` and speculative decoding agree token for token.
    """
    parameter = next(model.parameters(), None)
    device = parameter.device if parameter is not None else torch.device("cpu")
    if device.type != "cpu":
        raise ValueError(
            f"int8 mode runs on a CPU, but the model is on {device}; on a GPU use float16 or bfloat16 instead"
        )
    if not int8_available(device):
        raise RuntimeError(
            "int8 mode needs PyTorch's x86 or fbgemm quantised engine, which this PyTorch build lacks "
            f"(supported engines: {torch.backends.quantized.supported_engines})"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch marks its quantised-tensor constructors deprecated
        _replace_linear(model, {})
    if exact_attention and isinstance(model, PreTrainedModel):
        use_float64_decoder_attention(model)
    model.seq2spec_int8 = True
    return model


def _replace_linear(module: nn.Module, done: dict[int, Int8Linear]) -> None:
    for name, child in module.named_children():
        if type(child) is nn.Linear:
            if id(child) not in done:  # a layer used in two places stays one layer
                done[id(child)] = Int8Linear(child)
            setattr(module, name, done[id(child)])
        else:
            _replace_linear(child, done)


def is_int8(model: nn.Module | None) -> bool:
    """Whether ``model`` holds int8 layers (``quantize_int8`` converted it or a part of it)."""
    if model is None:
        return False
    return bool(getattr(model, "seq2spec_int8", False)) or any(isinstance(m, Int8Linear) for m in model.modules())


def quantize_int8_pair(big: PreTrainedModel, draft: PreTrainedModel | None) -> None:
    """int8 mode for a big model and its draft, in place. The draft's decoder step is int8 already through its lean
    step (``SpeculationOptions.int8_draft``) and reads the float weights it is built from; a draft with an encoder
    of its own gets that encoder quantised (its output only steers proposals)."""
    own_encoder = draft is not None and draft.config.is_encoder_decoder and draft.get_encoder() is not big.get_encoder()
    if own_encoder:
        quantize_int8(draft.get_encoder(), exact_attention=False)
    quantize_int8(big)


def float_dtype(dtype: object) -> torch.dtype | None:
    """The dtype to load weights in: float32 for the int8 mode (quantised after loading), else ``dtype``."""
    return torch.float32 if is_int8_dtype(dtype) else dtype  # type: ignore[return-value]
