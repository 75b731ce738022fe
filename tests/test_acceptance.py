"""Per-row acceptance: every row advances by its own accepted length, and rows leave the batch when done."""

from __future__ import annotations

import pytest
from conftest import assert_same, greedy

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import random_sources

NUM_DRAFT = 5


@pytest.mark.parametrize("rows", [1, 2, 7, 32])
def test_self_draft_accepts_whole_blocks_at_every_batch_size(toy_models, rows):
    models = toy_models["t5-v1_1"]
    big = models["big"]
    input_ids, mask = random_sources(rows, seed=21, pad_id=0)
    # min_new_tokens keeps every output at 24 tokens or more
    expected = greedy(big, input_ids, mask, max_new_tokens=32, min_new_tokens=24)
    lengths = (expected[:, 1:] != 0).sum(dim=1)
    assert int(lengths.min()) >= 20
    # the big model as its own draft, in its own precision (int8_draft=False), never paused: every candidate accepted
    speculator = Seq2SeqSpeculator(
        big, big, num_draft_tokens=NUM_DRAFT, adaptive=False, int8_draft=False, pause_draft=False
    )
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=32, min_new_tokens=24), expected)
    stats = speculator.last_stats
    assert stats.tokens_per_big_forward >= NUM_DRAFT
    assert stats.generated_tokens == int(lengths.sum())


def test_per_row_needs_fewer_big_forwards_than_batch_min(toy_models):
    models = toy_models["t5-v1_1"]
    input_ids, mask = random_sources(32, seed=22, pad_id=0)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=40)
    forwards = {}
    for mode in ("per-row", "batch-min"):
        speculator = Seq2SeqSpeculator(models["big"], models["perturbed"], num_draft_tokens=4, acceptance=mode)
        assert_same(speculator.generate(input_ids, mask, max_new_tokens=40), expected)
        forwards[mode] = speculator.last_stats.big_forwards
        if mode == "per-row":
            assert 0 < speculator.last_stats.acceptance_rate < 1
    assert forwards["per-row"] < forwards["batch-min"]


def test_finished_rows_leave_the_batch(toy_models):
    """Row forwards count only live rows: short rows stop costing big-model work once they end."""
    models = toy_models["t5-v1_1"]
    input_ids, mask = random_sources(16, seed=23, pad_id=0)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=40)
    speculator = Seq2SeqSpeculator(models["big"])
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=40), expected)
    stats = speculator.last_stats
    lengths = (expected[:, 1:] != 0).sum(dim=1)
    assert int(lengths.min()) < int(lengths.max())
    assert stats.big_forwards == int(lengths.max())
    assert stats.big_row_forwards == int(lengths.sum()) < stats.big_forwards * 16


def test_stats_are_consistent(toy_models):
    models = toy_models["bart"]
    input_ids, mask = random_sources(7, seed=24, pad_id=1)
    speculator = Seq2SeqSpeculator(models["big"], models["perturbed"], num_draft_tokens=3)
    output = speculator.generate(input_ids, mask, max_new_tokens=30)
    stats = speculator.last_stats
    assert stats.draft_forwards > 0 and stats.big_forwards > 0
    assert 0 < stats.accepted_draft_tokens <= stats.proposed_draft_tokens
    assert sum(stats.accepted_length_histogram) == stats.big_row_forwards
    # every token after the decoder start is counted once (the toys never emit padding)
    assert stats.generated_tokens == int((output[:, 1:] != models["big"].config.pad_token_id).sum())
    # a row forward emits at most its accepted candidates and the big model's own token
    assert stats.accepted_draft_tokens < stats.generated_tokens <= stats.accepted_draft_tokens + stats.big_row_forwards
    assert set(stats.as_dict()) >= {"acceptance_rate", "tokens_per_big_forward", "accepted_length_histogram"}


def test_adaptive_draft_length_grows_with_a_perfect_draft(toy_models):
    models = toy_models["t5-v1_1"]
    input_ids, mask = random_sources(4, seed=25, pad_id=0)
    speculator = Seq2SeqSpeculator(models["big"], models["big"], num_draft_tokens=2, max_draft_tokens=12)
    speculator.generate(input_ids, mask, max_new_tokens=40, min_new_tokens=40)
    histogram = speculator.last_stats.accepted_length_histogram
    assert len(histogram) - 1 > 2, f"no block longer than the starting draft length was accepted: {histogram}"
