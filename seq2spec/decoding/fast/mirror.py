"""What the big model's mirrored decoder forwards (``exact_t5.py``, ``exact_whisper.py``) share: a linear layer
without its module call, the structure they refuse, and the cache comparison of their probes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import EncoderDecoderCache, PreTrainedModel

from seq2spec.int8 import Int8Linear

MIRRORED_LINEARS = (nn.Linear, Int8Linear)  # the linear layer types a mirror reproduces


def linear_forward(layer: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """nn.Linear's forward without the module call; an Int8Linear through its own forward."""
    if type(layer) is nn.Linear:
        return F.linear(hidden, layer.weight, layer.bias)
    return layer(hidden)


def refuse_hooks_and_other_linears(model: PreTrainedModel) -> None:
    """Raise ValueError where a mirror would not do what the model's decoder does: a module with hooks, a linear
    layer other than ``nn.Linear`` or seq2spec's ``Int8Linear``, a vocabulary head that is missing or hooked."""
    for name, module in model.get_decoder().named_modules():
        if module._forward_hooks or module._forward_pre_hooks:
            raise ValueError(f"decoder module {name!r} has hooks")
        if isinstance(module, nn.Linear) and type(module) not in MIRRORED_LINEARS:
            raise ValueError(f"decoder layer {name!r} is a {type(module).__name__}, not a plain nn.Linear")
    head = model.get_output_embeddings()
    if head is None or head._forward_hooks or head._forward_pre_hooks:
        raise ValueError("the vocabulary head is missing or has hooks")


def caches_equal(first: EncoderDecoderCache, second: EncoderDecoderCache) -> bool:
    """Whether two caches hold the same layers with bit-equal keys and values."""
    for part in ("self_attention_cache", "cross_attention_cache"):
        layers = getattr(first, part).layers, getattr(second, part).layers
        if len(layers[0]) != len(layers[1]):
            return False
        for one, other in zip(*layers, strict=True):
            if not (torch.equal(one.keys, other.keys) and torch.equal(one.values, other.values)):
                return False
    return True
