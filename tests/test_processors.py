import pytest
import torch
from transformers import LogitsProcessorList
from transformers.generation.logits_process import (
    SuppressTokensAtBeginLogitsProcessor,
    SuppressTokensLogitsProcessor,
    TemperatureLogitsWarper,
)

from seq2spec.decoding.processors import CachedSuppressTokens, CachedSuppressTokensAtBegin, with_cached_masks


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cached_suppress_tokens_match_transformers(dtype):
    generator = torch.Generator().manual_seed(0)
    original = SuppressTokensLogitsProcessor([1, 5, 17, 99])
    cached = CachedSuppressTokens(original)
    for length in (1, 3, 4):
        ids = torch.randint(0, 100, (3, length), generator=generator)
        scores = torch.randn(3, 100, generator=generator).to(dtype)
        expected = original(ids, scores.clone())
        got = cached(ids, scores.clone())
        assert got.dtype == expected.dtype
        assert torch.equal(got, expected)
        assert torch.isinf(got[:, [1, 5, 17, 99]]).all() and torch.isfinite(got[:, 2]).all()


def test_cached_begin_suppress_follows_the_begin_index():
    generator = torch.Generator().manual_seed(1)
    original = SuppressTokensAtBeginLogitsProcessor([3, 7], begin_index=4)
    cached = CachedSuppressTokensAtBegin(original)
    for begin in (4, 2):
        original.set_begin_index(begin)
        cached.set_begin_index(begin)
        for length in (1, 2, 3, 4, 5):
            ids = torch.randint(0, 50, (2, length), generator=generator)
            scores = torch.randn(2, 50, generator=generator)
            expected = original(ids, scores.clone())
            assert torch.equal(cached(ids, scores.clone()), expected)
            assert torch.isinf(expected[:, 3]).all() == (length == begin)


def test_with_cached_masks_keeps_order_and_other_processors():
    temperature = TemperatureLogitsWarper(0.5)
    processors = LogitsProcessorList(
        [SuppressTokensAtBeginLogitsProcessor([2], begin_index=1), temperature, SuppressTokensLogitsProcessor([4])]
    )
    replaced = with_cached_masks(processors)
    assert [type(p) for p in replaced] == [CachedSuppressTokensAtBegin, TemperatureLogitsWarper, CachedSuppressTokens]
    assert replaced[1] is temperature
    ids = torch.zeros((2, 1), dtype=torch.long)
    scores = torch.randn(2, 10)
    assert torch.equal(replaced(ids, scores.clone()), processors(ids, scores.clone()))


def test_speculator_applies_suppress_tokens_as_generate_does(toy_models):
    """suppress_tokens / begin_suppress_tokens through the loop (cached masks) give generate's exact output."""
    from conftest import assert_same, greedy

    from seq2spec import Seq2SeqSpeculator
    from seq2spec.toys import random_sources

    models = toy_models["t5"]
    big = models["big"]
    input_ids, mask = random_sources(5, seed=4, pad_id=big.generation_config.pad_token_id)
    plain = greedy(big, input_ids, mask, max_new_tokens=20)
    # suppress the tokens greedy emits most, and at the first step the token most rows start with
    tokens, counts = torch.unique(plain[:, 1:], return_counts=True)
    frequent = tokens[counts.argsort(descending=True)][:3].tolist()
    first = int(torch.mode(plain[:, 1]).values)
    arguments = {"suppress_tokens": frequent, "begin_suppress_tokens": [first], "max_new_tokens": 20}
    expected = greedy(big, input_ids, mask, **arguments)
    assert not torch.equal(expected, plain)
    speculator = Seq2SeqSpeculator(big, models["perturbed"])
    assert_same(speculator.generate(input_ids, mask, **arguments), expected)
