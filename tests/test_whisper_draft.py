"""The shared-embedding Whisper draft: built from the big model's layers, saved without the shared parts, loaded back
onto the big model, and used by the speculator with one encoder call."""

from __future__ import annotations

import pytest
import torch
from toy_helpers import build_toy_whisper, toy_features

from seq2spec import Seq2SeqSpeculator
from seq2spec.whisper.draft import (
    WEIGHTS_FILE,
    VocabularySubsetHead,
    draft_from_big_layers,
    load_whisper_draft,
    output_token_ids,
    own_parameters,
    restrict_output_vocabulary,
    save_whisper_draft,
)


@pytest.fixture(scope="module")
def big():
    return build_toy_whisper(decoder_layers=3)


def test_layers_are_copies_and_embeddings_are_shared(big):
    draft = draft_from_big_layers(big, [0, 2])
    decoder = draft.model.decoder
    assert decoder.embed_tokens is big.model.decoder.embed_tokens
    assert decoder.embed_positions is big.model.decoder.embed_positions
    assert draft.proj_out is big.proj_out
    assert torch.equal(decoder.layers[1].fc1.weight, big.model.decoder.layers[2].fc1.weight)
    assert decoder.layers[1].fc1.weight is not big.model.decoder.layers[2].fc1.weight
    assert [layer.self_attn.layer_idx for layer in decoder.layers] == [0, 1]
    with pytest.raises(ValueError, match="decoder layers of the big model"):
        draft_from_big_layers(big, [0, 7])


def test_save_and_load_round_trip(big, tmp_path):
    draft = draft_from_big_layers(big, [0, 2])
    with torch.no_grad():  # make it differ from the big model's layers, as a trained draft does
        for parameter in own_parameters(draft).values():
            parameter.add_(0.01 * torch.randn_like(parameter))
    save_whisper_draft(draft, tmp_path, dtype=torch.float32, note="test")
    stored = set(__import__("safetensors.torch").torch.load_file(tmp_path / WEIGHTS_FILE))
    assert not any(name.startswith(("embed", "proj")) for name in stored)  # shared parts are not stored
    loaded = load_whisper_draft(big, tmp_path)
    assert loaded.model.decoder.embed_tokens is big.model.decoder.embed_tokens
    features = toy_features(2, seed=3)
    with torch.no_grad():
        encoded = big.model.encoder(features)
        ids = torch.tensor([[big.generation_config.decoder_start_token_id, 5, 9, 11]] * 2)
        expected = draft(input_ids=ids, encoder_outputs=encoded).logits
        actual = loaded(input_ids=ids, encoder_outputs=encoded).logits
    torch.testing.assert_close(actual, expected)


def test_load_rejects_a_mismatched_big_model(big, tmp_path):
    save_whisper_draft(draft_from_big_layers(big, [0]), tmp_path)
    other = build_toy_whisper(max_target_positions=96)
    with pytest.raises(ValueError, match="max_target_positions"):
        load_whisper_draft(other, tmp_path)
    with pytest.raises(FileNotFoundError, match="holds no Whisper draft"):
        load_whisper_draft(big, tmp_path / "missing")


def test_speculator_with_loaded_draft_equals_generate(big, tmp_path):
    save_whisper_draft(draft_from_big_layers(big, [0, 1]), tmp_path, dtype=torch.float32)
    draft = load_whisper_draft(big, tmp_path)
    features = toy_features(4, seed=11)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    speculator = Seq2SeqSpeculator(big, draft)
    actual = speculator.generate(input_features=features, max_new_tokens=30, language="fr")
    assert torch.equal(actual, expected)
    assert speculator.last_stats.draft_encoder_calls == 0
    assert speculator.last_stats.accepted_draft_tokens > 0


def test_vocabulary_subset_head_scores_only_its_tokens(big):
    draft = draft_from_big_layers(big, [0, 1])
    vocab = big.config.vocab_size
    subset = torch.tensor([3, 0, 17, vocab - 1, 40])
    hidden = torch.randn(2, 3, big.config.d_model)
    head = VocabularySubsetHead(big.proj_out, subset)
    logits = head(hidden)
    full = big.proj_out(hidden)
    assert logits.shape == full.shape
    torch.testing.assert_close(logits[..., subset], full[..., subset])
    others = torch.ones(vocab, dtype=torch.bool)
    others[subset] = False
    assert bool((logits[..., others] == torch.finfo(logits.dtype).min).all())
    for bad, message in (([], "non-empty"), ([1, vocab], "non-empty and in"), ([2, 2], "must not repeat")):
        with pytest.raises(ValueError, match=message):
            VocabularySubsetHead(big.proj_out, torch.tensor(bad, dtype=torch.long))
    restrict_output_vocabulary(draft, subset)
    assert torch.equal(output_token_ids(draft), subset)
    with pytest.raises(TypeError, match="not a full Linear"):
        restrict_output_vocabulary(draft, subset)


def test_subset_draft_round_trip_and_exact_speculation(big, tmp_path):
    """A draft whose head scores part of the vocabulary proposes only those tokens; base's output is unchanged."""
    features = toy_features(6, seed=21)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    # the tokens the big model emits, minus a few of them, plus the special tokens
    emitted = torch.unique(expected[expected < big.config.vocab_size])
    special = torch.arange(big.generation_config.eos_token_id, big.config.vocab_size)
    subset = torch.unique(torch.cat([emitted[::2], special]))
    draft = restrict_output_vocabulary(draft_from_big_layers(big, [0, 1]), subset)
    save_whisper_draft(draft, tmp_path, dtype=torch.float32)
    loaded = load_whisper_draft(big, tmp_path)
    assert torch.equal(output_token_ids(loaded), subset)
    assert output_token_ids(load_whisper_draft(big, tmp_path, full_vocabulary=True)) is None
    speculator = Seq2SeqSpeculator(big, loaded)
    actual = speculator.generate(input_features=features, max_new_tokens=30, language="fr")
    assert torch.equal(actual, expected)
    stats = speculator.last_stats
    assert 0 < stats.accepted_draft_tokens < stats.proposed_draft_tokens
    # what the big model emitted outside the subset was never proposed, so never accepted from the draft
    outside = ~torch.isin(expected, subset)
    assert bool(outside.any())


def test_min_draft_confidence_cuts_draft_calls_not_output(big):
    features = toy_features(5, seed=8)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    draft = draft_from_big_layers(big, [0])
    calls = {}
    for confidence in (0.0, 0.9):
        speculator = Seq2SeqSpeculator(big, draft, min_draft_confidence=confidence)
        assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
        calls[confidence] = speculator.last_stats.draft_forwards
    assert calls[0.9] < calls[0.0]
    with pytest.raises(ValueError, match="min_draft_confidence"):
        Seq2SeqSpeculator(big, draft, min_draft_confidence=1.0)
