"""seq2spec.decoding.fast.exact_whisper: the big Whisper's mirrored decoder forward gives transformers' logits bit for
bit through the runner's cache surgery (padded rows, rollbacks, dropped rows), the speculator verifies through it
without changing any output, and it stands aside when its probe finds any difference or the model has hooks."""

from __future__ import annotations

import pytest
import torch
from toy_helpers import build_toy_whisper, prompted_long_form, toy_features, whisper_draft_sharing_encoder

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding.families import family_of
from seq2spec.decoding.fast import exact_whisper
from seq2spec.decoding.fast.exact import ExactForwards
from seq2spec.decoding.fast.exact_whisper import ExactWhisperForward
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.int8 import quantize_int8


@pytest.fixture(scope="module")
def big():
    return build_toy_whisper(seed=0, decoder_layers=3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, "int8"], ids=str)
def test_exact_forward_equals_transformers_bit_for_bit_through_rollback_and_row_drops(dtype):
    """Also in the int8 mode (Int8Linear layers, seq2spec's float64 decoder attention)."""
    model = build_toy_whisper(seed=1, decoder_layers=2)
    model = quantize_int8(model) if dtype == "int8" else model.to(dtype)
    exact = ExactWhisperForward.checked(model)
    assert exact is not None
    generator = torch.Generator().manual_seed(5)
    with torch.inference_mode():
        features = toy_features(4, seed=4).to(model.dtype)
        encoded = model.get_encoder()(features).last_hidden_state
        reference = DecoderRunner(model, family_of(model), encoded, None)
        fast = DecoderRunner(model, family_of(model), encoded, None, exact=exact)

        def both(tokens: torch.Tensor) -> None:
            assert torch.equal(fast.forward(tokens), reference.forward(tokens))

        def tokens(rows: int, width: int) -> torch.Tensor:
            return torch.randint(0, model.config.vocab_size, (rows, width), generator=generator)

        for runner in (reference, fast):  # a left-padded prompt: rows 1 and 2 start later
            runner.pad_prompt([0, 1, 2, 0])
        both(tokens(4, 3))
        for runner in (reference, fast):
            runner.keep([3, 1, 0, 2], fed=3)
        both(tokens(4, 2))
        for runner in (reference, fast):
            runner.select([0, 2, 3])
        both(tokens(3, 1))
        for runner in (reference, fast):
            runner.keep([1, 0, 1], fed=1)
        both(tokens(3, 4))


def test_speculator_verifies_through_the_exact_forward_with_greedy_output(big, monkeypatch):
    """Short clips and long form with timestamps, previous-text conditioning and a prompt: generate's output,
    every verification forward through the mirror; with exact_big_forward=False none is."""
    calls = []
    original = ExactWhisperForward.__call__
    monkeypatch.setattr(ExactWhisperForward, "__call__", lambda self, *args: calls.append(1) or original(self, *args))
    draft = whisper_draft_sharing_encoder(big)
    features = toy_features(5, seed=8)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    lengths = (expected != big.generation_config.eos_token_id).sum(dim=1)
    assert len({tuple(row) for row in expected.tolist()}) >= 3 and lengths.unique().numel() >= 2
    speculator = Seq2SeqSpeculator(big, draft)
    assert isinstance(speculator._exact_forwards.for_model(big), ExactWhisperForward)
    calls.clear()  # the probe's own calls
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert len(calls) == speculator.last_stats.big_forwards > 0
    features, kwargs = prompted_long_form()
    expected = big.generate(features, **kwargs)
    calls.clear()
    assert torch.equal(speculator.generate(input_features=features, **kwargs), expected)
    assert len(calls) == speculator.last_stats.big_forwards > 0
    calls.clear()
    plain = Seq2SeqSpeculator(big, draft, exact_big_forward=False)
    assert torch.equal(plain.generate(input_features=features, **kwargs), expected)
    assert not calls


def test_a_forward_that_differs_in_the_last_bit_is_never_used(big, monkeypatch):
    assert ExactWhisperForward.checked(big) is not None
    norm = exact_whisper._norm
    monkeypatch.setattr(exact_whisper, "_norm", lambda layer, hidden: norm(layer, hidden) * (1 + 2**-20))
    assert not ExactWhisperForward(big).matches_on_probe()
    assert ExactWhisperForward.checked(big) is None


def test_models_outside_the_mirror_keep_transformers_forward(big):
    hooked = build_toy_whisper(seed=2, decoder_layers=1)
    handle = hooked.model.decoder.layers[0].fc1.register_forward_hook(lambda module, args, output: output)
    assert ExactWhisperForward.checked(hooked) is None
    handle.remove()
    assert ExactWhisperForward.checked(hooked) is not None
    assert ExactWhisperForward.checked(hooked.train()) is None
    hooked.eval()
    with pytest.raises(ValueError, match="WhisperForConditionalGeneration"):
        ExactWhisperForward(hooked.model)
    forwards = ExactForwards()
    first = forwards.for_model(big)
    assert isinstance(first, ExactWhisperForward) and forwards.for_model(big) is first
    with torch.no_grad():
        big.model.decoder.layers[0].fc1.bias.add_(0.0)  # an in-place change: checked again
    assert forwards.for_model(big) is not first


def test_the_mirror_builds_its_mask_under_either_cache_keyword(big, monkeypatch):
    """transformers before 5.24 names create_causal_mask's cache ``past_key_values``: the mirror must still pass its
    probe there (a keyword it does not take would make it stand aside, and the draft lose the big model's
    cross-attention keys and values)."""
    real = exact_whisper.create_causal_mask

    def before_5_24(config, inputs_embeds, attention_mask, past_key_values, position_ids=None, **kwargs):
        return real(config, inputs_embeds, attention_mask, past_key_values, position_ids=position_ids, **kwargs)

    monkeypatch.setattr(exact_whisper, "create_causal_mask", before_5_24)
    assert ExactWhisperForward.checked(big.eval()) is not None
