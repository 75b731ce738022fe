"""Input-copy drafting: candidates copied from each row's source; output still exactly greedy."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same, greedy

from seq2spec import Seq2SeqSpeculator
from seq2spec.drafts import InputCopyProposer
from seq2spec.toy_models import random_sources, varied_enough

COPYING_FAMILIES = ("t5", "t5-v1_1", "mt5")  # the toy BART unties its encoder and decoder embeddings


@pytest.mark.parametrize("family", COPYING_FAMILIES)
@pytest.mark.parametrize("rows", [1, 16])
def test_input_copy_equals_greedy(toy_models, family, rows):
    big = toy_models[family]["big"]
    input_ids, mask = random_sources(rows, seed=40 + rows, pad_id=0)
    expected = greedy(big, input_ids, mask, max_new_tokens=40)
    if rows > 1:
        assert varied_enough(expected, 0, min_lengths=2)
    speculator = Seq2SeqSpeculator(big, draft="input-copy", num_draft_tokens=8, max_draft_tokens=32)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=40), expected)
    assert speculator.last_stats.draft_forwards == 0


def test_sources_sharing_no_token_with_the_output(toy_models):
    big = toy_models["t5-v1_1"]["big"]
    input_ids, mask = random_sources(32, seed=44, pad_id=0)
    expected = greedy(big, input_ids, mask, max_new_tokens=40)
    disjoint = [
        row
        for row in range(32)
        if not set(input_ids[row, : int(mask[row].sum())].tolist()) & set(expected[row, 1:].tolist())
    ]
    assert disjoint, "no row without overlap in this batch"
    ids, attention = input_ids[disjoint], mask[disjoint]
    speculator = Seq2SeqSpeculator(big, draft="input-copy")
    assert_same(speculator.generate(ids, attention, max_new_tokens=40), greedy(big, ids, attention, max_new_tokens=40))
    assert speculator.last_stats.accepted_draft_tokens == 0


def test_alignment_follows_the_output_through_the_source():
    proposer = InputCopyProposer([[10, 11, 12, 13, 14, 15, 1]], filler_token_id=0, initial_length=3)
    proposer.start(torch.zeros(1, 1, dtype=torch.long))
    assert proposer.propose(8, None).tolist() == [[10, 11, 12]]  # nothing generated yet: from the start
    proposer.accept(torch.tensor([3]), torch.tensor([99]))  # all three kept, then a correction
    assert proposer.positions == [3] and proposer.lengths == [6]
    assert proposer.propose(8, None).tolist() == [[13, 14, 15, 1]]  # no n-gram match for 99: continue at 3
    proposer.accept(torch.tensor([1]), torch.tensor([14]))  # 13 kept, then 14 (a deleted token re-inserted)
    assert proposer.propose(2, None).tolist() == [[15, 1]]  # realigned on "13 14"


def test_rows_of_different_proposal_lengths_are_padded_with_the_filler():
    proposer = InputCopyProposer([[5, 6, 7, 8], [9]], filler_token_id=0, initial_length=4)
    proposer.start(torch.zeros(2, 1, dtype=torch.long))
    assert proposer.propose(4, None).tolist() == [[5, 6, 7, 8], [9, 0, 0, 0]]
    assert proposer.proposed_counts == [4, 1]


def test_input_copy_needs_one_vocabulary(toy_models):
    with pytest.raises(ValueError, match="share one tokenizer"):
        Seq2SeqSpeculator(toy_models["bart"]["big"], draft="input-copy")
    with pytest.raises(TypeError, match="not both"):
        Seq2SeqSpeculator(toy_models["t5"]["big"], toy_models["t5"]["big"], draft="input-copy")


def test_input_copy_through_correct(toy_byte_models):
    big, _, tokenizer = toy_byte_models
    texts = ["copy me if you can", "", "another line"]
    plain = Seq2SeqSpeculator(big, tokenizer=tokenizer).correct(texts, max_new_tokens=16)
    copied = Seq2SeqSpeculator(big, tokenizer=tokenizer, draft="input-copy").correct(texts, max_new_tokens=16)
    assert copied == plain
