"""The int8 mode on a CPU: every linear layer of a model converted to ``Int8Linear``, in place.

On a CPU a small model's matrix products are bound by memory traffic; int8 weights are a quarter of float32's, and
PyTorch's quantised kernels multiply int8 by int8 with exact integer sums. ``Int8Linear`` quantises each token on its
own, so a token's result does not depend on the rest of the forward, and the decoder's attention runs in float64
(``attention.py``), so that summation order cannot move an int8 rounding step: speculative decoding of an int8 model
then gives exactly that int8 model's greedy ``generate`` output. Attention, normalisation and embeddings stay in
float32; the weights cannot go back to float32 afterwards.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn
from transformers import PreTrainedModel

from seq2spec.int8.attention import use_float64_decoder_attention
from seq2spec.int8.kernels import int8_available
from seq2spec.int8.linear import Int8Linear

INT8 = "int8"


def is_int8_dtype(dtype: object) -> bool:
    """True for ``"int8"`` and ``torch.int8``: the int8 mode, not a tensor dtype to cast weights to."""
    return dtype == INT8 or dtype is torch.int8


def float_dtype(dtype: object) -> torch.dtype | None:
    """The dtype to load weights in: float32 for the int8 mode (quantised after loading), else ``dtype``."""
    return torch.float32 if is_int8_dtype(dtype) else dtype  # type: ignore[return-value]


def quantize_int8(model: nn.Module, *, exact_attention: bool = True) -> nn.Module:
    """Replace every ``nn.Linear`` inside ``model`` with an ``Int8Linear``, in place; returns ``model``.

    The model must be on a CPU (PyTorch's int8 kernels run there only). Its float weights are released. With
    ``exact_attention`` a transformers model's decoder attention switches to ``seq2spec.int8.attention`` (float64
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
