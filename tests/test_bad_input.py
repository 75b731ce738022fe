"""Bad input gets a clear TypeError/ValueError that names the problem."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import build_toy_model, random_sources


@pytest.fixture(scope="module")
def pair(toy_models):
    models = toy_models["t5-v1_1"]
    return models["big"], models["perturbed"]


def test_decoder_only_model_is_refused(pair):
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=128))
    with pytest.raises(TypeError, match="not an encoder-decoder"):
        Seq2SeqSpeculator(gpt2)
    with pytest.raises(TypeError, match="draft .*not an encoder-decoder"):
        Seq2SeqSpeculator(pair[0], gpt2)


def test_not_a_model_is_refused():
    with pytest.raises(TypeError, match="big must be a transformers model"):
        Seq2SeqSpeculator(42)


def test_refused_family_is_named_with_its_reason():
    from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration

    config = ProphetNetConfig(
        vocab_size=64,
        hidden_size=32,
        num_encoder_layers=1,
        num_decoder_layers=1,
        num_encoder_attention_heads=2,
        num_decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
    )
    with pytest.raises(NotImplementedError, match="ProphetNet.*one new token per cached forward"):
        Seq2SeqSpeculator(ProphetNetForConditionalGeneration(config))


def test_different_vocabularies_are_refused(pair):
    other = build_toy_model("t5-v1_1", vocab_size=96)
    with pytest.raises(ValueError, match="different vocabularies"):
        Seq2SeqSpeculator(pair[0], other)


def test_different_special_tokens_are_refused(pair):
    other = build_toy_model("t5-v1_1", seed=3)
    other.generation_config.eos_token_id = 2
    with pytest.raises(ValueError, match="eos_token_id: big 1 vs draft 2"):
        Seq2SeqSpeculator(pair[0], other)


@pytest.mark.parametrize("value, error", [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)])
def test_bad_max_new_tokens(pair, value, error):
    speculator = Seq2SeqSpeculator(*pair)
    input_ids, mask = random_sources(2, pad_id=0)
    with pytest.raises(error, match="max_new_tokens"):
        speculator.generate(input_ids, mask, max_new_tokens=value)


def test_bad_texts(toy_byte_models):
    big, small, tokenizer = toy_byte_models
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        speculator.correct(["fine", 3])
    with pytest.raises(TypeError, match="not a single string"):
        speculator.correct("a lone string")
    with pytest.raises(TypeError, match="iterable of strings"):
        speculator.correct(17)
    with pytest.raises(ValueError, match="batch_size"):
        speculator.correct(["x"], batch_size=0)
    with pytest.raises(ValueError, match="max_new_tokens must be positive"):
        speculator.correct(["x"], max_new_tokens=0)


def test_bad_tensors(pair):
    speculator = Seq2SeqSpeculator(*pair)
    with pytest.raises(TypeError, match="torch.Tensor"):
        speculator.generate([[5, 6, 7]])
    with pytest.raises(TypeError, match="integer token ids"):
        speculator.generate(torch.rand(2, 4))
    with pytest.raises(ValueError, match="non-empty"):
        speculator.generate(torch.zeros(0, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="attention_mask"):
        speculator.generate(torch.ones(2, 4, dtype=torch.long), torch.ones(2, 3, dtype=torch.long))


def test_source_longer_than_learned_positions(toy_models):
    bart = toy_models["bart"]["big"]
    speculator = Seq2SeqSpeculator(bart)
    too_long = torch.full((1, bart.config.max_position_embeddings + 1), 5)
    with pytest.raises(ValueError, match="more than the model's 256 source positions"):
        speculator.generate(too_long)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"do_sample": True, "num_return_sequences": 2}, ValueError, "num_return_sequences=2 is not supported"),
        ({"num_beams": 3}, ValueError, "num_beams=3 is not supported"),
        ({"no_such_option": 1}, TypeError, "unexpected generation arguments"),
    ],
)
def test_non_greedy_or_unknown_generation_arguments(pair, kwargs, error, message):
    speculator = Seq2SeqSpeculator(*pair)
    input_ids, mask = random_sources(2, pad_id=0)
    with pytest.raises(error, match=message):
        speculator.generate(input_ids, mask, max_new_tokens=5, **kwargs)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"num_draft_tokens": 0}, "num_draft_tokens must be a positive integer"),
        ({"num_draft_tokens": 20}, "num_draft_tokens <= max_draft_tokens"),
        ({"acceptance": "batch-max"}, "acceptance must be one of"),
        ({"lean_draft": "no"}, "lean_draft must be True or False"),
    ],
)
def test_bad_options(pair, options, message):
    with pytest.raises(ValueError, match=message):
        Seq2SeqSpeculator(*pair, **options)
