"""The shared-embedding Whisper draft: built from the big model's layers, saved without the shared parts, loaded back
onto the big model, and used by the speculator with one encoder call."""

from __future__ import annotations

import pytest
import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.toy_models import build_toy_whisper, toy_features
from seq2spec.whisper_draft import (
    WEIGHTS_FILE,
    draft_from_big_layers,
    load_whisper_draft,
    own_parameters,
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
