"""Cache surgery keeps every row's entries contiguous and right-aligned."""

from __future__ import annotations

import torch
from transformers import DynamicCache, EncoderDecoderCache

from seq2spec.decoding.cache import drop_first_slots, drop_last_entries, select_rows


def _cache_with(keys: torch.Tensor) -> EncoderDecoderCache:
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    cache.self_attention_cache.update(keys.clone(), -keys.clone(), 0)
    cache.cross_attention_cache.update(keys[:, :, :2].clone(), keys[:, :, :2].clone(), 0)
    return cache


def _keys(rows: int, length: int) -> torch.Tensor:
    # value at [row, 0, slot, 0] = 100 * row + slot, so positions are easy to read back
    base = 100 * torch.arange(rows)[:, None] + torch.arange(length)[None, :]
    return base[:, None, :, None].float().expand(rows, 1, length, 2).contiguous()


def test_rows_drop_their_own_tails_and_shift_right():
    cache = _cache_with(_keys(3, 6))
    shifts = drop_last_entries(cache, [1, 3, 2])
    assert shifts == [0, 2, 1]  # one entry cropped from all, the rest by shifting
    keys = cache.self_attention_cache.layers[0].keys[:, 0, :, 0]
    assert keys.shape == (3, 5)
    assert keys[0].tolist() == [0, 1, 2, 3, 4]
    assert keys[1, 2:].tolist() == [100, 101, 102]  # row 1 kept 3 entries, right-aligned after 2 pad slots
    assert keys[2, 1:].tolist() == [200, 201, 202, 203]
    values = cache.self_attention_cache.layers[0].values[:, 0, :, 0]
    assert values[1, 2:].tolist() == [-100, -101, -102]


def test_uniform_drop_is_a_crop_and_leading_slots_can_be_trimmed():
    cache = _cache_with(_keys(2, 5))
    assert drop_last_entries(cache, [2, 2]) == [0, 0]
    assert cache.self_attention_cache.get_seq_length() == 3
    drop_first_slots(cache, 1)
    assert cache.self_attention_cache.layers[0].keys[:, 0, :, 0].tolist() == [[1, 2], [101, 102]]


def test_select_rows_touches_self_and_cross_attention():
    cache = _cache_with(_keys(3, 4))
    select_rows(cache, torch.tensor([2, 0]))
    assert cache.self_attention_cache.layers[0].keys[:, 0, 0, 0].tolist() == [200, 0]
    assert cache.cross_attention_cache.layers[0].keys[:, 0, 0, 0].tolist() == [200, 0]
