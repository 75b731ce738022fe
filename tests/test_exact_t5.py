"""seq2spec.decoding.fast.exact_t5: the big T5's mirrored decoder forward gives transformers' logits bit for bit through
the runner's cache surgery, the speculator uses it without changing any output, and it stands aside when its probe
finds any difference or the model is outside what it mirrors."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import varied_enough

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import build_toy_model, random_sources
from seq2spec.decoding.families import family_of
from seq2spec.decoding.fast import exact_t5
from seq2spec.decoding.fast.exact import ExactForwards
from seq2spec.decoding.fast.exact_t5 import ExactT5Forward
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.int8 import quantize_int8


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, "int8"], ids=str)
@pytest.mark.parametrize("family", ["t5", "t5-v1_1", "mt5"])
def test_exact_forward_equals_transformers_bit_for_bit_through_rollback_and_row_drops(family, dtype):
    """Also in the int8 mode (Int8Linear layers, float64 decoder attention with eager-style masks)."""
    model = build_toy_model(family, seed=11, d_model=48, layers=2).eval()
    model = quantize_int8(model) if dtype == "int8" else model.to(dtype)
    ids, mask = random_sources(4, seed=3)
    exact = ExactT5Forward.checked(model)
    assert exact is not None
    with torch.inference_mode():
        encoded = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
        reference = DecoderRunner(model, family_of(model), encoded, mask)
        fast = DecoderRunner(model, family_of(model), encoded, mask, exact=exact)
        generator = torch.Generator().manual_seed(5)

        def both(tokens: torch.Tensor) -> None:
            assert torch.equal(fast.forward(tokens), reference.forward(tokens))

        def tokens(rows: int, width: int) -> torch.Tensor:
            return torch.randint(3, model.config.vocab_size, (rows, width), generator=generator)

        both(torch.zeros(4, 1, dtype=torch.long))
        both(tokens(4, 4))
        for runner in (reference, fast):  # rows keep 1, 4, 0 and 2 of the 4 tokens: per-row left padding
            runner.keep([1, 4, 0, 2], fed=4)
        both(tokens(4, 2))
        both(tokens(4, 1))  # one token over a padded cache
        for runner in (reference, fast):
            runner.select([0, 2, 3])
        both(tokens(3, 3))
        for runner in (reference, fast):
            runner.keep([3, 3, 3], fed=3)  # no padding left: transformers' mask-free path
        both(tokens(3, 1))
        layers = fast.cache.self_attention_cache.layers, reference.cache.self_attention_cache.layers
        for one, other in zip(*layers, strict=True):
            assert torch.equal(one.keys, other.keys) and torch.equal(one.values, other.values)


@pytest.mark.parametrize("family", ["t5-v1_1", "mt5"])
def test_speculator_verifies_through_the_exact_forward_with_greedy_output(family, toy_models, monkeypatch):
    big, draft = toy_models[family]["big"], toy_models[family]["perturbed"]
    ids, mask = random_sources(6, seed=21)
    expected = greedy(big, ids, mask, max_new_tokens=24)
    assert varied_enough(expected, big.config.pad_token_id)
    calls = []
    original = ExactT5Forward.__call__

    def counted(self, *args, **kwargs):
        calls.append(args[0].shape)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ExactT5Forward, "__call__", counted)
    speculator = Seq2SeqSpeculator(big, draft)
    assert_same(speculator.generate(ids, mask, max_new_tokens=24), expected)
    probe_calls = 10  # the check at first use: two encoder masks, five forwards each
    assert len(calls) - probe_calls == speculator.last_stats.big_forwards > 0
    calls.clear()
    assert_same(speculator.generate(ids, mask, max_new_tokens=24), expected)
    assert len(calls) == speculator.last_stats.big_forwards  # checked once, not per call
    calls.clear()
    plain = Seq2SeqSpeculator(big, draft, exact_big_forward=False)
    assert_same(plain.generate(ids, mask, max_new_tokens=24), expected)
    assert not calls


def test_a_forward_that_differs_in_the_last_bit_is_never_used(monkeypatch):
    model = build_toy_model("t5-v1_1", seed=12, d_model=48, layers=2).eval()
    assert ExactT5Forward.checked(model) is not None

    def divided_norm(layer, hidden):  # the same norm written another way: equal to rounding, not bit for bit
        variance = hidden.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return layer.weight * (hidden / torch.sqrt(variance + layer.variance_epsilon))

    monkeypatch.setattr(exact_t5, "_norm", divided_norm)
    assert not ExactT5Forward(model).matches_on_probe()
    assert ExactT5Forward.checked(model) is None


def test_models_outside_the_mirror_keep_transformers_forward(toy_models):
    assert ExactT5Forward.checked(toy_models["bart"]["big"]) is None
    with pytest.raises(ValueError, match="T5 or MT5"):
        ExactT5Forward(toy_models["bart"]["big"])
    hooked = build_toy_model("t5-v1_1", seed=13, d_model=48, layers=2).eval()
    handle = hooked.get_decoder().block[1].register_forward_hook(lambda *args: None)
    assert ExactT5Forward.checked(hooked) is None
    handle.remove()
    assert ExactT5Forward.checked(hooked) is not None
    eager = build_toy_model("t5-v1_1", seed=13, d_model=48, layers=2).eval()
    eager.set_attn_implementation("eager")
    assert ExactT5Forward.checked(eager) is None
    other_linear = build_toy_model("t5-v1_1", seed=13, d_model=48, layers=2).eval()
    block = other_linear.get_decoder().block[0].layer[2].DenseReluDense
    block.wo = type("OtherLinear", (torch.nn.Linear,), {})(block.wo.in_features, block.wo.out_features, bias=False)
    assert ExactT5Forward.checked(other_linear) is None
    training = build_toy_model("t5-v1_1", seed=13, d_model=48, layers=2).train()
    assert ExactT5Forward.checked(training) is None


def test_the_exact_forward_is_checked_again_when_the_model_changes():
    model = build_toy_model("t5-v1_1", seed=14, d_model=48, layers=2).eval()
    forwards = ExactForwards()
    first = forwards.for_model(model)
    assert first is not None and forwards.for_model(model) is first
    with torch.no_grad():
        model.lm_head.weight.mul_(1.5)
    second = forwards.for_model(model)
    assert second is not None and second is not first
    model.train()
    assert forwards.for_model(model) is None
    model.eval()
    assert forwards.for_model(model) is not None
