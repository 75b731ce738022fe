"""The int8 mode: int8 layers whose per-token results do not depend on the rest of the forward, and speculative
decoding of an int8 model identical to that int8 model's own ``generate`` (T5, BART, Whisper short and long form,
token timestamps), through the Python API and the commands."""

from __future__ import annotations

import warnings

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import (
    build_toy_whisper,
    long_form_toy_features,
    perturbed_copy,
    toy_features,
    varied_enough,
    whisper_draft_sharing_encoder,
)

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import build_toy_model
from seq2spec.int8 import Int8Linear, int8_available, int8_pack, is_int8, quantize_int8, quantize_int8_pair

pytestmark = pytest.mark.skipif(not int8_available(), reason="this PyTorch build has no x86/fbgemm int8 engine")


def test_int8_rows_do_not_depend_on_each_other():
    """Each token's output is the same bit for bit whichever tokens share the call; PyTorch's own dynamic int8
    layer (one activation scale per tensor) is not, which is why Int8Linear exists."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 200)
    layer = Int8Linear(linear)
    rows = torch.randn(40, 96) * torch.rand(40, 1) * 4
    rows[7] = 0.0  # an all-zero row
    full = layer(rows)
    for start, count in [(0, 1), (3, 2), (5, 7), (11, 17), (30, 10)]:
        assert torch.equal(layer(rows[start : start + count]), full[start : start + count])
    assert torch.equal(layer(rows.reshape(4, 10, 96)).reshape(40, 200), full)
    reference = linear(rows).detach()
    assert (full - reference).abs().max() <= 0.03 * reference.abs().max()
    assert torch.equal(full[7], linear.bias.detach())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        packed = int8_pack(linear.weight, linear.bias)
    per_tensor = torch.ops.quantized.linear_dynamic(rows, packed, True)
    alone = torch.cat([torch.ops.quantized.linear_dynamic(row[None], packed, True) for row in rows])
    assert not torch.equal(per_tensor, alone)


def quantized_t5_like(family: str, seed: int):
    big = build_toy_model(family, seed=seed)
    draft = perturbed_copy(big, seed=50 + seed)
    quantize_int8_pair(big, draft)
    return big, draft


@pytest.mark.parametrize("family", ["t5", "bart"])
def test_int8_speculation_equals_int8_generate(family):
    big, draft = quantized_t5_like(family, seed=3)
    assert is_int8(big) and not any(isinstance(m, torch.nn.Linear) for m in big.modules())
    torch.manual_seed(7)
    input_ids = torch.randint(3, 128, (8, 12))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[2, 9:] = 0
    attention_mask[5, 4:] = 0
    expected = greedy(big, input_ids, attention_mask, max_new_tokens=24)
    assert varied_enough(expected, big.generation_config.pad_token_id)
    speculator = Seq2SeqSpeculator(big, draft)
    actual = speculator.generate(input_ids, attention_mask=attention_mask, max_new_tokens=24)
    assert_same(actual, expected)
    assert 0.0 < speculator.last_stats.acceptance_rate < 1.0
    copied = Seq2SeqSpeculator(big, "input-copy") if family == "t5" else None
    if copied is not None:
        assert_same(copied.generate(input_ids, attention_mask=attention_mask, max_new_tokens=24), expected)


@pytest.fixture(scope="module")
def int8_whisper():
    big = build_toy_whisper()
    draft = whisper_draft_sharing_encoder(big)
    quantize_int8_pair(big, draft)
    return big, draft


@pytest.mark.parametrize("form", ["short", "long", "long-token-timestamps"])
def test_int8_whisper_equals_int8_generate(int8_whisper, form):
    big, draft = int8_whisper
    if form == "short":
        features, extra = toy_features(6, seed=2), {"max_new_tokens": 30}
    else:
        features, mask = long_form_toy_features([7000, 4500, 6100], seed=11)
        extra = {"attention_mask": mask, "return_timestamps": True}
        if form == "long-token-timestamps":
            extra["return_token_timestamps"] = True
    kwargs = {"language": "en", **extra}
    expected = big.generate(features, **kwargs)
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=features, **kwargs)
    if form == "long-token-timestamps":
        assert torch.equal(actual["token_timestamps"], expected["token_timestamps"])
        actual, expected = actual["sequences"], expected["sequences"]
    assert varied_enough(expected, 256)
    assert_same(actual, expected)


def test_int8_errors_name_the_way_out(int8_whisper):
    big, _ = int8_whisper
    with pytest.raises(ValueError, match="quantize_int8_pair"):
        Seq2SeqSpeculator(build_toy_model("t5", seed=1), dtype="int8")
    with pytest.raises(ValueError, match="quantize_int8_pair"):
        from seq2spec.whisper.draft import load_whisper_draft

        load_whisper_draft(big)
    meta = torch.nn.Linear(4, 4, device="meta")
    with pytest.raises(ValueError, match="on a GPU use float16 or bfloat16"):
        quantize_int8(torch.nn.Sequential(meta))


def test_float64_decoder_attention_ignores_block_size_and_gaps():
    """A query's attention output is the same bit for bit whether it comes alone over a gap-free cache (generate)
    or inside a block of queries over a cache with masked slots (speculative verification)."""
    from seq2spec.int8.attention import float64_decoder_attention

    module = torch.nn.Module()
    module.is_decoder = True
    torch.manual_seed(0)
    heads, dim, valid = 4, 16, 30
    keys, values = torch.randn(1, heads, valid, dim), torch.randn(1, heads, valid, dim)
    queries = torch.randn(1, heads, 5, dim)
    gaps = [3, 4, 11, 20]  # rejected slots kept in the cache, masked
    slots = valid + len(gaps)
    keep = torch.tensor([slot not in gaps for slot in range(slots)])
    cache_keys = torch.randn(1, heads, slots, dim) * 9
    cache_values = torch.randn(1, heads, slots, dim) * 9
    cache_keys[:, :, keep], cache_values[:, :, keep] = keys, values
    mask = torch.full((1, 1, 5, slots), torch.finfo(torch.float32).min)
    for query in range(5):  # query q sees the first valid - 5 + q + 1 real keys
        seen = valid - 5 + query + 1
        mask[0, 0, query, keep.nonzero().flatten()[:seen]] = 0.0
    block, _ = float64_decoder_attention(module, queries, cache_keys, cache_values, mask, scaling=0.25)
    for query in range(5):
        seen = valid - 5 + query + 1
        alone, _ = float64_decoder_attention(
            module, queries[:, :, query : query + 1], keys[:, :, :seen], values[:, :, :seen], None, scaling=0.25
        )
        assert torch.equal(block[:, query : query + 1], alone)
