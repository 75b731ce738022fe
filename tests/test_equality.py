"""Every decoding path returns exactly ``big.generate(do_sample=False)``, tensor for tensor."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import varied_enough

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import FAMILIES, random_sources

MAX_NEW = 40


def _batch(family_models, rows: int, seed: int, max_new_tokens: int = MAX_NEW):
    """The first of a fixed sequence of random batches whose greedy outputs differ in length and content."""
    big = family_models["big"]
    pad = big.config.pad_token_id
    for attempt in range(50):
        input_ids, mask = random_sources(rows, seed=seed + 1000 * attempt, pad_id=pad)
        if _exercises_loop(greedy(big, input_ids, mask, max_new_tokens=max_new_tokens), pad, max_new_tokens):
            return input_ids, mask
    raise AssertionError(f"no varied batch of {rows} rows found for {big.config.model_type}")


def _exercises_loop(expected: torch.Tensor, pad: int, max_new_tokens: int) -> bool:
    """Rows differ in length and content; in batches of 7 or more, some rows end early and one hits the limit."""
    if not varied_enough(expected, pad, min_lengths=2):
        return False
    if expected.shape[0] < 7:
        return True
    lengths = (expected[:, 1:] != pad).sum(dim=1)
    return lengths.unique().numel() >= 3 and int(lengths.max()) == max_new_tokens


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("draft", ["big", "perturbed", "unrelated"])
@pytest.mark.parametrize("rows", [2, 7, 32])
def test_batched_generate_equals_greedy(toy_models, family, draft, rows):
    models = toy_models[family]
    big = models["big"]
    input_ids, mask = _batch(models, rows, seed=rows)
    expected = greedy(big, input_ids, mask, max_new_tokens=MAX_NEW)
    pad = big.config.pad_token_id
    # The fixture must exercise the loop: rows of different lengths and content, some stopped by the limit.
    assert _exercises_loop(expected, pad, MAX_NEW)
    speculator = Seq2SeqSpeculator(big, models[draft], num_draft_tokens=4)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=MAX_NEW), expected)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("draft", ["big", "perturbed", "unrelated"])
def test_batch_of_one_equals_greedy(toy_models, family, draft):
    models = toy_models[family]
    big = models["big"]
    input_ids, mask = _batch(models, 6, seed=11)
    speculator = Seq2SeqSpeculator(big, models[draft], num_draft_tokens=3)
    outputs = []
    for row in range(input_ids.shape[0]):
        ids = input_ids[row : row + 1, : int(mask[row].sum())]
        expected = greedy(big, ids, max_new_tokens=MAX_NEW)
        assert_same(speculator.generate(ids, max_new_tokens=MAX_NEW), expected)
        outputs.append(expected.shape[1])
    assert len(set(outputs)) >= 2, "single-row references all have the same length"


@pytest.mark.parametrize("num_draft_tokens", range(1, 11))
@pytest.mark.parametrize("acceptance", ["per-row", "batch-min"])
def test_every_fixed_draft_length(toy_models, num_draft_tokens, acceptance):
    models = toy_models["t5-v1_1"]
    input_ids, mask = _batch(models, 7, seed=3)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=MAX_NEW)
    speculator = Seq2SeqSpeculator(
        models["big"],
        models["perturbed"],
        num_draft_tokens=num_draft_tokens,
        adaptive=False,
        max_draft_tokens=max(10, num_draft_tokens),
        acceptance=acceptance,
    )
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=MAX_NEW), expected)
    assert speculator.last_stats.proposed_draft_tokens > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_batch_min_mode_equals_greedy(toy_models, family):
    models = toy_models[family]
    input_ids, mask = _batch(models, 7, seed=5)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=MAX_NEW)
    speculator = Seq2SeqSpeculator(models["big"], models["perturbed"], acceptance="batch-min")
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=MAX_NEW), expected)


@pytest.mark.parametrize("max_new_tokens", [1, 2, 7])
def test_short_length_limits(toy_models, max_new_tokens):
    models = toy_models["t5"]
    input_ids, mask = _batch(models, 7, seed=2)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=max_new_tokens)
    speculator = Seq2SeqSpeculator(models["big"], models["perturbed"], num_draft_tokens=5)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=max_new_tokens), expected)


def test_default_length_comes_from_generation_config(toy_models):
    models = toy_models["t5-v1_1"]
    input_ids, mask = _batch(models, 7, seed=8)
    expected = greedy(models["big"], input_ids, mask)
    speculator = Seq2SeqSpeculator(models["big"], models["perturbed"])
    assert_same(speculator.generate(input_ids, mask), expected)


def test_without_attention_mask(toy_models):
    models = toy_models["t5"]
    input_ids, _ = _batch(models, 7, seed=9)
    expected = greedy(models["big"], input_ids, max_new_tokens=MAX_NEW)
    speculator = Seq2SeqSpeculator(models["big"], models["perturbed"])
    assert_same(speculator.generate(input_ids, max_new_tokens=MAX_NEW), expected)


@pytest.mark.parametrize(
    "generation_kwargs",
    [{"min_new_tokens": 12}, {"no_repeat_ngram_size": 2}, {"repetition_penalty": 1.3}, {"bad_words_ids": [[5], [7]]}],
)
def test_logits_processors_match_generate(toy_models, generation_kwargs):
    """Processors see each row's own prefix, draft tokens included, exactly as generate shows them."""
    models = toy_models["t5-v1_1"]
    input_ids, mask = _batch(models, 7, seed=4)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=30, **generation_kwargs)
    plain = greedy(models["big"], input_ids, mask, max_new_tokens=30)
    assert not torch.equal(expected, plain) or expected.shape != plain.shape, "the processor changed nothing"
    speculator = Seq2SeqSpeculator(models["big"], models["perturbed"], num_draft_tokens=4)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=30, **generation_kwargs), expected)


def test_no_draft_is_plain_greedy(toy_models):
    models = toy_models["bart"]
    input_ids, mask = _batch(models, 7, seed=6)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=MAX_NEW)
    speculator = Seq2SeqSpeculator(models["big"])
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=MAX_NEW), expected)
    assert speculator.last_stats.tokens_per_big_forward == 1.0


def test_mbart_learned_positions_per_row():
    from toy_helpers import perturbed_copy

    from seq2spec.commands.toys import build_toy_model

    big = build_toy_model("mbart", seed=4)
    models = {"big": big}
    input_ids, mask = _batch(models, 7, seed=12)
    expected = greedy(big, input_ids, mask, max_new_tokens=MAX_NEW)
    speculator = Seq2SeqSpeculator(big, perturbed_copy(big, seed=9), num_draft_tokens=4)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=MAX_NEW), expected)
    assert 0 < speculator.last_stats.acceptance_rate < 1
