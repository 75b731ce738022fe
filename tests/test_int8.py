"""seq2spec.int8: int8 linear layers whose rows never influence each other, and the int8 mode's promise: seq2spec's
output equals the int8 model's own generate, for T5 and Whisper, at batch 1 and above."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import build_toy_whisper, toy_features, varied_enough

from seq2spec import Seq2SeqSpeculator, quantize_int8
from seq2spec.int8 import Int8Linear, int8_available, is_int8
from seq2spec.toys import random_sources

pytestmark = pytest.mark.skipif(not int8_available(), reason="no int8 CPU kernels in this PyTorch build")


def test_each_row_is_computed_as_if_alone():
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 300)
    layer = Int8Linear(linear)
    inputs = torch.randn(2, 17, 96) * torch.logspace(-2, 2, 17)[None, :, None]  # rows of very different sizes
    together = layer(inputs)
    for row in range(2):
        for start, stop in ((0, 1), (3, 8), (16, 17), (0, 17)):
            assert torch.equal(layer(inputs[row : row + 1, start:stop]), together[row : row + 1, start:stop])
    with torch.no_grad():
        reference = linear(inputs)
    assert float((together - reference).abs().max() / reference.abs().max()) < 0.05  # int8 accuracy
    assert layer.weight.dtype == torch.int8 and layer.weight.shape == (300, 96)


def test_quantize_int8_replaces_every_linear_once_and_refuses_other_devices():
    big = build_toy_whisper(seed=2)
    shared = big.proj_out
    quantize_int8(big)
    assert is_int8(big) and not any(type(module) is torch.nn.Linear for module in big.modules())
    assert isinstance(big.proj_out, Int8Linear) and big.proj_out is not shared
    encoder_layer = big.model.encoder.layers[0].fc1
    decoder_layer = big.model.decoder.layers[0].fc1
    assert not encoder_layer.per_token and decoder_layer.per_token
    meta = torch.nn.Linear(4, 4, device="meta")
    with pytest.raises(ValueError, match="CPU"):
        quantize_int8(torch.nn.Sequential(meta))


@pytest.mark.parametrize("family", ["t5-v1_1", "bart"])
def test_int8_big_model_gives_its_own_greedy_output(family, toy_models):
    big = quantize_int8(copy.deepcopy(toy_models[family]["big"]))
    draft = toy_models[family]["perturbed"]
    for rows in (1, 6):
        ids, mask = random_sources(rows, seed=30 + rows)
        expected = greedy(big, ids, mask, max_new_tokens=24)
        if rows > 1:
            assert varied_enough(expected, big.config.pad_token_id)
        speculator = Seq2SeqSpeculator(big, draft)
        assert_same(speculator.generate(ids, mask, max_new_tokens=24), expected)
        assert speculator.last_stats.accepted_draft_tokens > 0


def test_int8_whisper_gives_its_own_greedy_output_short_and_long_form():
    from seq2spec.whisper.draft import draft_from_big_layers

    big = build_toy_whisper(seed=5, decoder_layers=3)
    draft = draft_from_big_layers(big, [0, 2])  # built before the conversion: it shares the big model's modules
    quantize_int8(big)
    speculator = Seq2SeqSpeculator(big, draft)
    features = toy_features(4, seed=9)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    long = toy_features(2, frames=7000, seed=10)
    mask = torch.ones(2, 7000, dtype=torch.long)
    mask[1, 5200:] = 0
    arguments = dict(attention_mask=mask, return_timestamps=True, language="fr", max_new_tokens=30)
    expected = big.generate(long, **arguments)
    assert torch.equal(speculator.generate(input_features=long, **arguments), expected)


def test_int8_by_name_and_its_errors(tmp_path, toy_models):
    big = toy_models["t5-v1_1"]["big"]
    big.save_pretrained(tmp_path / "big")
    speculator = Seq2SeqSpeculator(str(tmp_path / "big"), None, dtype="int8")
    assert is_int8(speculator.big)
    ids, mask = random_sources(3, seed=40)
    assert_same(speculator.generate(ids, mask, max_new_tokens=16), greedy(speculator.big, ids, mask, max_new_tokens=16))
    with pytest.raises(ValueError, match="quantize_int8"):
        Seq2SeqSpeculator(big, None, dtype="int8")
    with pytest.raises(ValueError, match="'int8'"):
        Seq2SeqSpeculator(str(tmp_path / "big"), None, dtype="int4")
