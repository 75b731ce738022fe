"""Decoder attention whose result for a query does not depend on how many other queries or keys share the call.

Speculative decoding scores several drafted tokens per row in one forward, and its rows keep rejected slots masked in
their caches; ``generate`` feeds one token per row over a cache without gaps. A float32 attention kernel sums in an
order that depends on those shapes, so the two differ in the last bits. Normally that decides nothing; in front of an
int8 layer (``seq2spec.int8``) a last-bit difference can move an activation across a rounding step and grow into a
different token. This attention computes the decoder's scores, softmax and weighted values in float64 from the
float32 inputs (a float32 product is exact in float64) and rounds the result to float32 once: different summation
orders then differ by about 1e-16 relative, far below float32's rounding step, so the rounded results agree bit for
bit. Encoder attention (the same input in ``generate`` and in speculation) keeps PyTorch's fused kernel.

The float64 copies of keys and values are kept while the same tensors come back (the cross-attention's, fixed while
a batch decodes).
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch import nn
from transformers import AttentionInterface, PretrainedConfig, PreTrainedModel
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

NAME = "seq2spec_float64_decoder"
# Whisper/BART/Marian, T5/MT5, BERT decoders, T5Gemma/Moonshine and others
CROSS_ATTENTION_NAMES = frozenset({"encoder_attn", "EncDecAttention", "crossattention", "cross_attn"})
CROSS_ATTENTION_MARK = "_seq2spec_cross_attention"
DECODER_MARK = "_seq2spec_decoder_attention"  # any module within the decoder (not every family sets is_decoder)


class _Float64Copy:
    """A tensor's float64 copy, kept while the tensor is the same object with the same contents."""

    __slots__ = ("source", "version", "copy")

    def __init__(self) -> None:
        self.source: torch.Tensor | None = None
        self.version = -1
        self.copy: torch.Tensor | None = None

    def of(self, tensor: torch.Tensor) -> torch.Tensor:
        version = _version(tensor)
        if tensor is not self.source or version != self.version:
            self.source, self.version, self.copy = tensor, version, tensor.double()
        return self.copy


def _version(tensor: torch.Tensor) -> int | None:
    try:
        return tensor._version
    except RuntimeError:  # an inference tensor keeps no count (the cross-attention cache is never changed in place)
        return None


def _float64(module: nn.Module, role: str, tensor: torch.Tensor) -> torch.Tensor:
    if not getattr(module, CROSS_ATTENTION_MARK, False):
        return tensor.double()
    copies = module.__dict__.setdefault("_seq2spec_float64", {})
    return copies.setdefault(role, _Float64Copy()).of(tensor)


def float64_decoder_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    position_bias: torch.Tensor | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """transformers' attention signature: float64 for decoder self- and cross-attention, sdpa (or the family's own
    eager attention, for position biases, soft-capped scores or attention weights) elsewhere."""
    softcap = kwargs.get("softcap")
    if not (getattr(module, DECODER_MARK, False) or getattr(module, "is_decoder", False)):
        if position_bias is not None or kwargs.get("output_attentions") or softcap is not None:
            family_eager = sys.modules[type(module).__module__].eager_attention_forward
            if position_bias is not None:
                kwargs["position_bias"] = position_bias
            return family_eager(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    key, value = _float64(module, "key", key), _float64(module, "value", value)
    if key.shape[1] != query.shape[1]:  # grouped-query attention: each key and value head serves several queries
        key = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)
        value = value.repeat_interleave(query.shape[1] // value.shape[1], dim=1)
    scores = torch.matmul(query.double(), key.transpose(-1, -2))
    if scaling != 1.0:
        scores = scores * scaling
    if softcap is not None:  # Gemma's capping of the scores, as its eager attention applies it
        scores = torch.tanh(scores / softcap) * softcap
    if position_bias is not None:
        scores = scores + position_bias
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = torch.softmax(scores, dim=-1)
    output = torch.matmul(weights, value).to(query.dtype)
    returned = weights.to(query.dtype) if kwargs.get("output_attentions") else None
    return output.transpose(1, 2).contiguous(), returned


class _EagerMeansFloat64:
    """Config mixin: a request for "eager" attention gets this attention, which returns attention weights as eager
    does (Whisper's ``generate`` asks for eager when it needs them, for token timestamps)."""

    @property
    def _attn_implementation(self) -> str | None:
        value = self._attn_implementation_internal
        return NAME if value == "eager" else value

    @_attn_implementation.setter
    def _attn_implementation(self, value: str | dict | None) -> None:
        PretrainedConfig._attn_implementation.fset(self, value)


def use_float64_decoder_attention(model: PreTrainedModel) -> None:
    """Switch ``model`` (encoder sdpa, decoder float64) to this attention; later requests for eager attention get it
    too."""
    AttentionInterface.register(NAME, float64_decoder_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, eager_mask)
    model.set_attn_implementation(NAME)
    for module in model.modules():
        config = getattr(module, "config", None)
        if isinstance(config, PretrainedConfig) and not isinstance(config, _EagerMeansFloat64):
            config.__class__ = type(type(config).__name__, (_EagerMeansFloat64, type(config)), {})
    for name, module in model.named_modules():
        if name.rpartition(".")[2] in CROSS_ATTENTION_NAMES:
            setattr(module, CROSS_ATTENTION_MARK, True)
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    for module in decoder.modules() if isinstance(decoder, nn.Module) else ():
        setattr(module, DECODER_MARK, True)
