"""seq2spec.drafts.lean_t5_encoder: a T5/MT5 draft's lean encoder gives transformers' encoder output on padded
batches, the speculator runs the draft's encoder through it without changing any output, and it stands aside when
its probe disagrees with transformers or the draft changed."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import varied_enough

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import build_toy_model, random_sources
from seq2spec.drafts.lean_t5_encoder import LeanT5Encoder

TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 5e-2, torch.float16: 1e-2}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("family", ["t5", "t5-v1_1", "mt5"])
def test_lean_encoder_gives_transformers_output_on_padded_rows(family, dtype):
    model = build_toy_model(family, seed=11, d_model=48, layers=2).to(dtype).eval()
    with torch.no_grad():  # position biases of a trained model's size (random ones are near zero)
        model.get_encoder().block[0].layer[0].SelfAttention.relative_attention_bias.weight.mul_(30)
    ids, mask = random_sources(5, seed=3)
    assert not bool(mask.all())  # some rows are padded
    lean = LeanT5Encoder.checked(model, tolerance=TOLERANCE[dtype])
    assert lean is not None
    with torch.inference_mode():
        for length in (ids.shape[1], 3):  # a second source length: its own position bias
            expected = model.get_encoder()(input_ids=ids[:, :length], attention_mask=mask[:, :length])
            actual = lean(ids[:, :length], mask[:, :length])
            real = mask[:, :length].bool()[..., None]
            scale = expected.last_hidden_state.float().abs().mean()
            gap = (expected.last_hidden_state.float() - actual.float()).abs().masked_fill(~real, 0).max() / scale
            assert gap <= TOLERANCE[dtype]


def test_a_probe_that_disagrees_keeps_transformers_encoder(monkeypatch):
    model = build_toy_model("t5-v1_1", seed=12, d_model=48, layers=2).eval()
    with torch.no_grad():
        model.get_encoder().block[0].layer[0].SelfAttention.relative_attention_bias.weight.mul_(30)
    assert LeanT5Encoder.checked(model) is not None
    # an encoder that forgot the relative position bias must be caught by the probe
    monkeypatch.setattr(LeanT5Encoder, "_bias", lambda self, length, dtype: torch.zeros(1, 1, length, length))
    assert LeanT5Encoder(model).probe_difference(model) > 1e-2
    assert LeanT5Encoder.checked(model) is None
    bart = build_toy_model("bart", seed=12)
    assert LeanT5Encoder.checked(bart) is None
    with pytest.raises(ValueError, match="T5 or MT5"):
        LeanT5Encoder(bart)


@pytest.mark.parametrize("family", ["t5-v1_1", "mt5"])
def test_speculator_runs_the_draft_encoder_lean_with_greedy_output(family, toy_models, monkeypatch):
    big, draft = toy_models[family]["big"], copy.deepcopy(toy_models[family]["perturbed"])
    with torch.no_grad():  # an encoder of its own: the draft no longer shares the big model's encoder output
        draft.get_encoder().final_layer_norm.weight.mul_(1.01)
    ids, mask = random_sources(6, seed=21)
    expected = greedy(big, ids, mask, max_new_tokens=24)
    assert varied_enough(expected, big.config.pad_token_id)
    calls = []
    original = LeanT5Encoder.__call__

    def counted(self, *args, **kwargs):
        calls.append(args[0].shape)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LeanT5Encoder, "__call__", counted)
    lean = Seq2SeqSpeculator(big, draft)
    assert not lean.shares_encoder and lean._proposers.lean_parts()[1] is not None
    calls.clear()  # the probe's own call
    assert_same(lean.generate(ids, mask, max_new_tokens=24), expected)
    assert calls == [ids.shape] and lean.last_stats.draft_encoder_calls == 1
    calls.clear()
    plain = Seq2SeqSpeculator(big, draft, lean_draft=False)
    assert_same(plain.generate(ids, mask, max_new_tokens=24), expected)
    assert not calls and plain.last_stats.draft_encoder_calls == 1


def test_the_lean_encoder_is_rebuilt_when_the_draft_changes(toy_models):
    big, draft = toy_models["t5-v1_1"]["big"], build_toy_model("t5-v1_1", seed=13, d_model=48, layers=1).eval()
    speculator = Seq2SeqSpeculator(big, draft)
    first = speculator._proposers.lean_parts()[1]
    assert first is not None and speculator._proposers.lean_parts()[1] is first
    query = draft.get_encoder().block[0].layer[0].SelfAttention.q.weight
    with torch.no_grad():
        query.mul_(1.5)  # changed in place: the fused copy would be stale
    second = speculator._proposers.lean_parts()[1]
    assert second is not None and second is not first
    assert torch.equal(second.layers[0].qkv[: second.inner], query)
    draft.train()
    assert speculator._proposers.lean_parts() == (None, None)  # dropout active: transformers' modules
    draft.eval()
    assert speculator._proposers.lean_parts()[1] is not None


def test_a_hooked_draft_encoder_runs_through_transformers(toy_models):
    big, draft = toy_models["t5-v1_1"]["big"], build_toy_model("t5-v1_1", seed=14, d_model=48, layers=1).eval()
    speculator = Seq2SeqSpeculator(big, draft)
    assert speculator._proposers.lean_parts()[1] is not None
    seen = []
    handle = draft.get_encoder().block[0].register_forward_hook(lambda *args: seen.append(1))
    try:
        assert speculator._proposers.lean_parts()[1] is None  # a hook added after the first build counts too
        ids, mask = random_sources(3, seed=5)
        assert_same(speculator.generate(ids, mask, max_new_tokens=8), greedy(big, ids, mask, max_new_tokens=8))
        assert seen == [1]
    finally:
        handle.remove()
    assert speculator._proposers.lean_parts()[1] is not None
