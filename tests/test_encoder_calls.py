"""Encoders run once per batch per model, and once in all when the draft's encoder is the big model's."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import assert_same, greedy

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import random_sources


class CallCounter:
    def __init__(self, module: torch.nn.Module) -> None:
        self.calls = 0
        self.handle = module.register_forward_hook(self._count)

    def _count(self, *_args) -> None:
        self.calls += 1


@pytest.fixture
def counted(toy_models):
    models = toy_models["t5-v1_1"]
    counters = []

    def count(model):
        counter = CallCounter(model.get_encoder())
        counters.append(counter)
        return counter

    yield models, count
    for counter in counters:
        counter.handle.remove()


def test_separate_encoders_run_once_each_per_batch(counted):
    models, count = counted
    big, small = models["big"], models["unrelated"]
    big_calls, small_calls = count(big), count(small)
    input_ids, mask = random_sources(7, seed=31, pad_id=0)
    speculator = Seq2SeqSpeculator(big, small)
    assert not speculator.shares_encoder
    speculator.generate(input_ids, mask, max_new_tokens=30)
    assert (big_calls.calls, small_calls.calls) == (1, 1)
    assert (speculator.last_stats.big_encoder_calls, speculator.last_stats.draft_encoder_calls) == (1, 1)


@pytest.mark.parametrize("how", ["same model", "same encoder module", "equal encoder weights"])
def test_shared_encoder_runs_once_in_all(counted, how):
    models, count = counted
    big = models["big"]
    if how == "same model":
        small = big
    elif how == "same encoder module":
        small = copy.deepcopy(models["perturbed"])
        small.encoder = big.encoder
    else:
        small = models["perturbed"]  # its encoder is a weight-for-weight copy of the big one
    big_calls = count(big)
    small_calls = count(small) if small.get_encoder() is not big.get_encoder() else big_calls
    input_ids, mask = random_sources(7, seed=32, pad_id=0)
    speculator = Seq2SeqSpeculator(big, small)
    assert speculator.shares_encoder
    expected = greedy(big, input_ids, mask, max_new_tokens=30)
    big_calls.calls = small_calls.calls = 0
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=30), expected)
    assert big_calls.calls == 1 and (small_calls is big_calls or small_calls.calls == 0)


def test_one_encoder_call_per_batch_in_correct(toy_byte_models, counted):
    big, small, tokenizer = toy_byte_models
    _, count = counted
    big_calls, small_calls = count(big), count(small)
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    texts = [f"sentence number {i} " * (1 + i % 3) for i in range(10)]
    speculator.correct(texts, batch_size=4, max_new_tokens=8, protect=False)  # every text read whole
    assert (big_calls.calls, small_calls.calls) == (3, 3)
    assert speculator.last_stats.big_encoder_calls == 3
