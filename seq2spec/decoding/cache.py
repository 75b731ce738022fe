"""Per-row surgery on an ``EncoderDecoderCache``.

Layout: every row's decoder self-attention entries are contiguous and right-aligned. Row ``r`` has ``pad[r]``
unused slots on the left, masked out of attention. After a verification forward of ``q`` tokens, row ``r`` keeps
only its first ``keep[r]`` new entries; the rejected tail is removed by shifting the row right, which turns the
removed slots into left padding. New tokens are then appended directly after every row's last valid entry, so
relative positions (T5) stay exact. The cross-attention cache is computed once and only ever loses finished rows.
"""

from __future__ import annotations

import functools
import inspect

import torch
from transformers import EncoderDecoderCache

from seq2spec.decoding.fast.transfer import to_device


@functools.cache
def _cache_keyword(forward_type: type) -> str:
    names = inspect.signature(forward_type.forward).parameters
    return "cache" if "cache" in names and "past_key_values" not in names else "past_key_values"


def cache_argument(model: torch.nn.Module, cache: object) -> dict[str, object]:
    """``{name: cache}`` under the keyword the model's forward takes: ``cache`` (transformers >= 5.24) or
    ``past_key_values`` (earlier releases, and models that still use it)."""
    return {_cache_keyword(type(model)): cache}


def _self_attention_layers(cache: EncoderDecoderCache) -> list:
    return [layer for layer in cache.self_attention_cache.layers if getattr(layer, "is_initialized", False)]


def drop_last_entries(cache: EncoderDecoderCache, counts: list[int]) -> list[int]:
    """Remove the last ``counts[r]`` self-attention entries of each row ``r``, keeping rows right-aligned.

    The ``min(counts)`` entries every row drops are cut off the end; the rest of row ``r``'s drop is done by
    shifting the row right by ``counts[r] - min(counts)``. Returns that shift: new left padding per row.
    """
    common = min(counts) if counts else 0
    if common:
        cache.self_attention_cache.crop(-common)
    shifts = [count - common for count in counts]
    if not any(shifts):
        return shifts
    for layer in _self_attention_layers(cache):
        length = layer.keys.shape[-2]
        device = layer.keys.device
        source = torch.arange(length, device=device)[None, :] - to_device(shifts, device)[:, None]
        index = source.clamp_(min=0)[:, None, :, None]
        layer.keys = layer.keys.gather(2, index.expand_as(layer.keys))
        layer.values = layer.values.gather(2, index.expand_as(layer.values))
    return shifts


def drop_first_slots(cache: EncoderDecoderCache, count: int) -> None:
    """Remove ``count`` leading slots from every row (slots that are padding in all rows)."""
    if count <= 0:
        return
    for layer in _self_attention_layers(cache):
        layer.keys = layer.keys[:, :, count:]
        layer.values = layer.values[:, :, count:]


def select_rows(cache: EncoderDecoderCache, rows: torch.Tensor) -> None:
    """Keep only ``rows`` (indices into the batch) in the self- and cross-attention caches."""
    for part in (cache.self_attention_cache, cache.cross_attention_cache):
        for layer in part.layers:
            if getattr(layer, "is_initialized", False) and layer.keys is not None and layer.keys.numel():
                index = rows.to(layer.keys.device)
                layer.keys = layer.keys.index_select(0, index)
                layer.values = layer.values.index_select(0, index)
