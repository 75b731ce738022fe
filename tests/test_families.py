"""Every encoder-decoder family in transformers' seq2seq and speech-seq2seq generation mappings decodes token for
token as its own greedy ``generate``, or is refused by name with the reason before anything is decoded.

The families come from the mappings (``family_models.encoder_decoder_cases``): a transformers release that adds a
family adds it here. Each is built tiny from its own default configuration, with outputs that vary from row to row
(``family_models.varied_model``) and a ragged batch of its own kind of input (token ids, log-mel features through
its feature extractor, or raw audio), and decoded with a draft that agrees part of the time (per-row and batch-min
acceptance), with a one-layer draft of its own that reads its own encoder, and with rounds that propose nothing
while rows stand at different lengths (a paused draft).
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same
from family_models import (
    MAX_NEW_TOKENS,
    FamilyCase,
    RaggedThenNothing,
    build,
    encoder_decoder_cases,
    greedy,
    one_layer_draft,
    perturbed,
    varied_model,
    variety,
)

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding.families import REFUSED
from seq2spec.drafts.width import RoundCost

CASES = encoder_decoder_cases()
SERVED = [case for case in CASES if case.model_type not in REFUSED]
REFUSED_CASES = [case for case in CASES if case.model_type in REFUSED]


def _ids(case: FamilyCase) -> str:
    return case.name


def test_the_mappings_bring_the_families_users_run():
    """The cases are read from transformers, not listed here: the families this library is asked for are among them."""
    names = {case.name for case in CASES}
    wanted = {"text:marian", "text:m2m_100", "text:pegasus", "text:umt5", "text:t5", "text:bart", "speech:moonshine"}
    assert wanted <= names
    assert "speech:whisper" in names and "speech:speech_to_text" in names


@pytest.mark.parametrize("case", SERVED, ids=_ids)
@pytest.mark.parametrize("acceptance", ["per-row", "batch-min"])
def test_family_decodes_as_its_own_greedy_generate(case, acceptance):
    big, inputs = varied_model(case)
    expected = greedy(big, inputs)
    summary = variety(expected, big)  # an equality over one repeated token, or rows all alike, would prove little
    assert summary["lengths"] >= 2 and summary["tokens"] >= 6 and summary["rows"] >= 3, summary
    # never paused (``pause_draft``): the draft's tokens must reach the loop
    speculator = Seq2SeqSpeculator(big, perturbed(big), num_draft_tokens=4, acceptance=acceptance, pause_draft=False)
    assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    assert speculator.last_stats.accepted_draft_tokens > 0  # the loop kept drafted tokens, rows at different lengths


@pytest.mark.parametrize("case", SERVED, ids=_ids)
def test_family_decodes_greedy_with_rounds_that_propose_nothing(case):
    big, inputs = varied_model(case)
    expected = greedy(big, inputs)
    speculator = Seq2SeqSpeculator(big, RaggedThenNothing(expected))
    assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    stats = speculator.last_stats
    assert stats.accepted_draft_tokens > 0 and stats.rounds_without_candidates > 0


@pytest.mark.parametrize("case", SERVED, ids=_ids)
def test_family_with_a_one_layer_draft_of_its_own(case):
    big, inputs = varied_model(case)
    expected = greedy(big, inputs)
    speculator = Seq2SeqSpeculator(big, one_layer_draft(case, big), num_draft_tokens=3)
    assert not speculator.shares_encoder  # the draft runs its own encoder on the same inputs
    assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    assert speculator.last_stats.draft_encoder_calls > 0


@pytest.mark.parametrize("case", [case for case in SERVED if not case.speech], ids=_ids)
def test_text_family_with_input_copy(case, monkeypatch):
    big, inputs = varied_model(case)
    encoder_embedding = big.get_encoder().get_input_embeddings()
    decoder_embedding = big.get_decoder().get_input_embeddings()
    if encoder_embedding.weight.shape != decoder_embedding.weight.shape:
        pytest.skip(f"{case.name}: source and target vocabularies differ, so there is no source token to copy")
    if not torch.equal(encoder_embedding.weight, decoder_embedding.weight):
        with pytest.raises(ValueError, match="share one tokenizer"):
            Seq2SeqSpeculator(big, "input-copy")
        return
    expected = greedy(big, inputs)
    speculator = Seq2SeqSpeculator(big, "input-copy")
    assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    assert speculator.last_stats.proposed_copy_tokens > 0
    # the copies cut to the narrowest widths (``fit_copy_width`` with a cost that is all positions): still greedy
    whole = speculator.last_stats.big_positions
    monkeypatch.setattr(RoundCost, "fitted", lambda self: (0.0, 1.0))
    cut = Seq2SeqSpeculator(big, "input-copy")
    assert_same(cut.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    assert cut.last_stats.big_positions < whole


@pytest.mark.parametrize("case", REFUSED_CASES, ids=_ids)
def test_family_that_cannot_verify_several_tokens_is_refused_by_name(case):
    model = build(case)
    with pytest.raises(NotImplementedError, match=f"{type(model).__name__}.*use the model's own generate"):
        Seq2SeqSpeculator(model)


INT8_CASES = [
    FamilyCase(model_type, speech)
    for model_type, speech in (
        ("marian", False),  # a sinusoid table
        ("m2m_100", False),  # fairseq numbers
        ("pegasus_x", False),  # computed sinusoids
        ("t5gemma", False),  # rotary, grouped-query attention, soft-capped scores
        ("switch_transformers", False),  # experts
        ("encoder-decoder", False),  # a BERT decoder (its cross-attention has no is_decoder)
        ("speech-encoder-decoder", True),
        ("moonshine", True),
    )
]


@pytest.mark.parametrize("case", INT8_CASES, ids=_ids)
def test_int8_mode_of_any_family_is_its_own_int8_generate(case):
    """The int8 mode (every linear layer int8, decoder attention in float64) keeps the loop bit for bit on the int8
    model's own greedy generate for families beyond the shipped ones."""
    import copy

    from seq2spec.int8 import quantize_int8_pair

    big, inputs = varied_model(case)
    big = copy.deepcopy(big)
    draft = perturbed(big)
    quantize_int8_pair(big, draft)
    expected = greedy(big, inputs)
    speculator = Seq2SeqSpeculator(big, draft, num_draft_tokens=4)
    assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
