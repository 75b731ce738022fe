"""recipes/train_speller.py: growing the big model from the seed keeps its function; cutting the draft's decoder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes"))
import train_speller  # noqa: E402

SEED = {"d_model": 32, "d_kv": 8, "num_heads": 4, "d_ff": 48, "num_layers": 2, "num_decoder_layers": 3}
BIG = {"d_model": 96, "d_kv": 8, "num_heads": 12, "d_ff": 128, "num_layers": 2, "num_decoder_layers": 3}


def trained_looking_seed():
    """A random seed whose norm weights and relative biases are not at their initial values, so that a widening
    that drops or mis-scales them shows in the logits."""
    model = train_speller.new_model(SEED, 3)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() == 1 or "relative_attention_bias" in name:
                parameter.add_(0.5 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


def logits(model, source, target):
    with torch.no_grad():
        return model(input_ids=source, decoder_input_ids=target).logits


def test_widen_keeps_the_function_and_noise_breaks_the_symmetry():
    seed = trained_looking_seed()
    source, target = torch.randint(3, 2048, (3, 11)), torch.randint(3, 2048, (3, 7))
    expected = logits(seed, source, target)
    grown = train_speller.widen(seed, BIG, seed=0).eval()
    assert grown.config.d_model == 96 and grown.config.num_heads == 12 and grown.config.d_ff == 128
    torch.testing.assert_close(logits(grown, source, target), expected, atol=1e-4, rtol=1e-4)
    noisy = train_speller.widen(seed, BIG, seed=0, noise=0.01).eval()
    difference = (logits(noisy, source, target) - expected).abs().max()
    assert 0 < difference < 0.1 * expected.abs().max()
    repeated = noisy.encoder.block[0].layer[0].SelfAttention.q.weight[:, :32]
    assert not torch.equal(repeated, noisy.encoder.block[0].layer[0].SelfAttention.q.weight[:, 32:64])


def test_widen_refuses_shapes_it_cannot_grow_into():
    seed = trained_looking_seed()
    with pytest.raises(ValueError, match="d_model multiple"):
        train_speller.widen(seed, {**BIG, "d_model": 80}, seed=0)
    with pytest.raises(ValueError, match="same head size"):
        train_speller.widen(seed, {**BIG, "d_kv": 16}, seed=0)
    with pytest.raises(ValueError, match="feed-forward"):
        train_speller.widen(seed, {**BIG, "d_ff": 16}, seed=0)


def test_cut_decoder_keeps_the_chosen_layers_and_the_position_bias():
    seed = trained_looking_seed()
    cut = train_speller.cut_decoder(seed, (0, 2), seed=1)
    assert cut.config.num_decoder_layers == 2 and cut.config.d_model == seed.config.d_model
    for kept, origin in ((0, 0), (1, 2)):
        assert torch.equal(
            cut.decoder.block[kept].layer[2].DenseReluDense.wo.weight,
            seed.decoder.block[origin].layer[2].DenseReluDense.wo.weight,
        )
    bias = cut.decoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight
    assert torch.equal(bias, seed.decoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight)
    assert torch.equal(cut.shared.weight, seed.shared.weight)
