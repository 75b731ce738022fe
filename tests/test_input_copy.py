"""Input-copy drafting: candidates copied from each row's source; output still exactly greedy."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import varied_enough

from seq2spec import DecodingBatch, Seq2SeqSpeculator
from seq2spec.commands.toys import random_sources
from seq2spec.decoding.families import family_of
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts import CopyThenDraftProposer, InputCopyProposer, LengthSchedule


def batch_of(sources: list[list[int]], eos_token_ids: tuple[int, ...] = ()) -> DecodingBatch:
    """A batch whose rows' source tokens are ``sources`` (right-padded with 0), decoder prompt token 0."""
    rows, width = len(sources), max(len(source) for source in sources)
    ids = torch.tensor([source + [0] * (width - len(source)) for source in sources])
    mask = (torch.arange(width)[None, :] < torch.tensor([len(source) for source in sources])[:, None]).long()
    prompt = torch.zeros(rows, 1, dtype=torch.long)
    return DecodingBatch(ids, mask, torch.zeros(rows, 1, 1), prompt, eos_token_ids, pad_token_id=0)


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
    proposer = InputCopyProposer(LengthSchedule(3, 1, 32, "double"))
    proposer.start(batch_of([[10, 11, 12, 13, 14, 15, 1]]))
    assert proposer.propose(8, None).tokens.tolist() == [[10, 11, 12]]  # nothing generated yet: from the start
    proposer.accept([3], torch.tensor([99]))  # all three kept, then a correction
    assert proposer.copy.positions == [3] and proposer.copy.schedule.lengths == [6]
    assert proposer.propose(8, None).tokens.tolist() == [[13, 14, 15, 1]]  # no n-gram match for 99: continue at 3
    proposer.accept([1], torch.tensor([14]))  # 13 kept, then 14 (a deleted token re-inserted)
    assert proposer.propose(2, None).tokens.tolist() == [[15, 1]]  # realigned on "13 14"


def test_rows_of_different_proposal_lengths_are_padded_with_the_filler():
    proposer = InputCopyProposer(LengthSchedule(4, 1, 32, "double"))
    proposer.start(batch_of([[5, 6, 7, 8], [9]]))
    proposal = proposer.propose(4, None)
    assert proposal.tokens.tolist() == [[5, 6, 7, 8], [9, 0, 0, 0]]
    assert proposal.counts == [4, 1] and proposal.copied == [4, 1]


def test_input_copy_needs_one_vocabulary(toy_models):
    with pytest.raises(ValueError, match="share one tokenizer"):
        Seq2SeqSpeculator(toy_models["bart"]["big"], draft="input-copy")
    with pytest.raises(TypeError, match="draft="):
        Seq2SeqSpeculator(toy_models["t5"]["big"], small=toy_models["t5"]["big"])


def test_input_copy_through_correct(toy_byte_models):
    big, _, tokenizer = toy_byte_models
    texts = ["copy me if you can", "", "another line"]
    plain = Seq2SeqSpeculator(big, tokenizer=tokenizer).correct(texts, max_new_tokens=16)
    copied = Seq2SeqSpeculator(big, tokenizer=tokenizer, draft="input-copy").correct(texts, max_new_tokens=16)
    assert copied == plain


@pytest.mark.parametrize("family", COPYING_FAMILIES)
@pytest.mark.parametrize("rows", [1, 16])
def test_copy_with_draft_model_equals_greedy(toy_models, family, rows):
    big, draft = toy_models[family]["big"], toy_models[family]["perturbed"]
    input_ids, mask = random_sources(rows, seed=50 + rows, pad_id=0)
    expected = greedy(big, input_ids, mask, max_new_tokens=40)
    speculator = Seq2SeqSpeculator(big, draft, input_copy=True)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=40), expected)
    stats = speculator.last_stats
    assert stats.draft_forwards > 0 and stats.proposed_draft_tokens > stats.proposed_copy_tokens


def test_copy_with_draft_keeps_the_draft_cache_in_step(toy_models):
    """With the big model as its own draft, every draft-model proposal is right: the draft's cache never lags."""
    big = toy_models["t5"]["big"]
    input_ids, mask = random_sources(16, seed=52, pad_id=0)
    # Sources that start like the output make copying rows and drafting rows meet in one batch.
    expected = greedy(big, input_ids, mask, max_new_tokens=30)
    sources = torch.cat([expected[:, 1:6], input_ids], dim=1)
    masks = torch.cat([torch.ones_like(expected[:, 1:6]), mask], dim=1)
    speculator = Seq2SeqSpeculator(big, big, input_copy=True, int8_draft=False)  # the draft in its own precision
    assert_same(speculator.generate(sources, masks, max_new_tokens=30), greedy(big, sources, masks, max_new_tokens=30))
    stats = speculator.last_stats
    model_proposed = stats.proposed_draft_tokens - stats.proposed_copy_tokens
    model_accepted = stats.accepted_draft_tokens - stats.accepted_copy_tokens
    assert stats.proposed_copy_tokens > 0 and model_proposed > 0
    assert model_accepted >= 0.9 * model_proposed, (model_accepted, model_proposed)


def test_copy_with_draft_needs_a_draft_model(toy_models):
    with pytest.raises(ValueError, match="no draft model"):
        Seq2SeqSpeculator(toy_models["t5"]["big"], input_copy=True)


@torch.inference_mode()
def test_copy_then_draft_proposals_follow_the_accepted_text(toy_models):
    """Whatever each row keeps, the draft's next proposals are what the draft predicts from the whole kept text
    computed from scratch (its incremental cache never drifts), and copy mode starts with that same token."""
    draft = toy_models["t5"]["perturbed"]
    rows = 6
    input_ids, mask = random_sources(rows, seed=60, pad_id=0)
    own_output = greedy(draft, input_ids, mask, max_new_tokens=12)[:, 1:].clone()
    own_output[:, 2::2] = torch.randint(2, 128, own_output[:, 2::2].shape, generator=torch.Generator().manual_seed(1))
    sources = [own_output[r].tolist() if r % 2 else input_ids[r, : int(mask[r].sum())].tolist() for r in range(rows)]
    encoder_output = draft.get_encoder()(input_ids=input_ids, attention_mask=mask).last_hidden_state
    runner = DecoderRunner(draft, family_of(draft), encoder_output, mask)
    proposer = CopyThenDraftProposer(runner, LengthSchedule(5, 1, 8, "double"), LengthSchedule(5, 1, 16, "add"))
    proposer.start(batch_of(sources))
    kept_text = [[0] for _ in range(rows)]
    generator = torch.Generator().manual_seed(0)
    modes = set()
    for _ in range(6):
        proposal = proposer.propose(8, lambda so_far, scores: scores)
        candidates = proposal.tokens
        for r in range(rows):
            proposed = candidates[r, : proposal.counts[r]].tolist()
            modes.add(proposer.copying[r])
            expected, text = [], list(kept_text[r])
            for _ in range(1 if proposer.copying[r] else len(proposed)):
                logits = draft(
                    encoder_outputs=(encoder_output[r : r + 1],),
                    attention_mask=mask[r : r + 1],
                    decoder_input_ids=torch.tensor([text]),
                ).logits
                expected.append(int(logits[0, -1].argmax()))
                text.append(expected[-1])
            assert proposed[: len(expected)] == expected, (r, proposer.copying[r])
        accepted = [int(torch.randint(0, proposal.counts[r] + 1, (1,), generator=generator)) for r in range(rows)]
        bonus = torch.randint(2, 128, (rows,), generator=generator)
        for r in range(rows):
            kept_text[r] += candidates[r, : accepted[r]].tolist() + [int(bonus[r])]
        proposer.accept(accepted, bonus)
    assert modes == {True, False}
