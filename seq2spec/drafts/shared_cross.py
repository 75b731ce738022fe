"""Cross-attention keys and values that a Whisper draft takes from the big model instead of computing them.

A Whisper draft reads the big model's encoder output, and each of its layers projects that output to
cross-attention keys and values once per batch: over 1,500 frames per row, two matrix products of ``[rows x 1,500,
width] x [width, width]`` per layer. The shipped draft's projections are two of base's own (distillation keeps
them frozen, and ``load_whisper_draft`` gives the draft those very modules), so the big model computes the same keys
and values for its own first forward. ``shared_cross_layers`` finds such layers (the same modules, not equal
copies); the big model's runner computes their keys and values before the draft's first step, exactly as its
first forward would (which then reads them), and the draft's cache takes them. The big model's numbers are
untouched; the draft skips work whose result it already has.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import PreTrainedModel


def _decoder_layers(model: PreTrainedModel) -> list | None:
    decoder = getattr(getattr(model, "model", None), "decoder", None)
    layers = getattr(decoder, "layers", None)
    return list(layers) if layers is not None else None


def shared_cross_layers(big: PreTrainedModel, draft: PreTrainedModel) -> tuple[tuple[int, int], ...]:
    """``(draft layer, big layer)`` pairs of Whisper decoder layers whose cross-attention key and value projections
    are the same modules (both models reading the same encoder output)."""
    if type(big).__name__ != "WhisperForConditionalGeneration" or type(draft).__name__ != "WhisperForCausalLM":
        return ()
    big_layers, draft_layers = _decoder_layers(big), _decoder_layers(draft)
    if not big_layers or not draft_layers:
        return ()
    owners = {}
    for index, layer in enumerate(big_layers):
        attention = layer.encoder_attn
        owners[(id(attention.k_proj), id(attention.v_proj))] = index
    pairs = []
    for index, layer in enumerate(draft_layers):
        attention = layer.encoder_attn
        source = owners.get((id(attention.k_proj), id(attention.v_proj)))
        if source is not None:
            pairs.append((index, source))
    return tuple(pairs)


def big_cross_states(
    pairs: tuple[tuple[int, int], ...],
    compute: Callable[[int], tuple[torch.Tensor, torch.Tensor] | None],
    dtype: torch.dtype,
    device: torch.device,
) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """For each shared ``(draft layer, big layer)``, the big layer's keys and values from ``compute(big layer)``
    (the big runner's ``cross_attention``), keyed by draft layer; empty when ``compute`` cannot give them or they
    are not in the draft's dtype and on its device."""
    states = {}
    for draft_layer, big_layer in pairs:
        computed = compute(big_layer)
        if computed is None or computed[0].dtype != dtype or computed[0].device != device:
            return {}
        states[draft_layer] = computed
    return states
