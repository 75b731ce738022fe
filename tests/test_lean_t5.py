"""seq2spec.drafts.lean_t5: the draft's lean T5/MT5 decoder step gives transformers' logits through the runner's cache
surgery (appending, per-row rollback, dropped rows), the speculator uses it without changing any output, and it
stands aside when its probe disagrees with transformers or the draft changed."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import varied_enough

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import build_toy_model, random_sources
from seq2spec.decoding.families import family_of
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts import lean_t5
from seq2spec.drafts.lean_t5 import LeanT5Decoder

TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 5e-2, torch.float16: 1e-2}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("family", ["t5", "t5-v1_1", "mt5"])
def test_lean_step_gives_transformers_logits_through_rollback_and_row_drops(family, dtype):
    model = build_toy_model(family, seed=11, d_model=48, layers=2).to(dtype).eval()
    ids, mask = random_sources(4, seed=3)
    lean = LeanT5Decoder.checked(model, tolerance=TOLERANCE[dtype])
    assert lean is not None
    with torch.inference_mode():
        encoded = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
        reference = DecoderRunner(model, family_of(model), encoded, mask)
        fast = DecoderRunner(model, family_of(model), encoded, mask, step=lean)
        generator = torch.Generator().manual_seed(5)

        def both(tokens: torch.Tensor) -> None:
            expected = reference.forward(tokens).log_softmax(-1)
            actual = fast.forward(tokens).log_softmax(-1)
            torch.testing.assert_close(actual, expected, atol=TOLERANCE[dtype], rtol=0)

        def tokens(rows: int, width: int) -> torch.Tensor:
            return torch.randint(3, model.config.vocab_size, (rows, width), generator=generator)

        both(torch.zeros(4, 1, dtype=torch.long))
        both(tokens(4, 4))
        for runner in (reference, fast):  # rows keep 1, 4, 0 and 2 of the 4 tokens: per-row left padding
            runner.keep([1, 4, 0, 2], fed=4)
        both(tokens(4, 2))
        for runner in (reference, fast):
            runner.select([0, 2, 3])
        both(tokens(3, 3))
        for runner in (reference, fast):
            runner.keep([3, 1, 2], fed=3)
        both(tokens(3, 1))


@pytest.mark.parametrize("family", ["t5-v1_1", "mt5"])
def test_speculator_runs_the_draft_through_the_lean_step_with_greedy_output(family, toy_models, monkeypatch):
    big, draft = toy_models[family]["big"], toy_models[family]["perturbed"]
    ids, mask = random_sources(6, seed=21)
    expected = greedy(big, ids, mask, max_new_tokens=24)
    assert varied_enough(expected, big.config.pad_token_id)
    calls = []
    original = LeanT5Decoder.__call__

    def counted(self, *args, **kwargs):
        calls.append(args[0].shape)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LeanT5Decoder, "__call__", counted)
    lean = Seq2SeqSpeculator(big, draft)
    assert lean._proposers.lean_step() is not None
    calls.clear()  # the probe's own calls
    assert_same(lean.generate(ids, mask, max_new_tokens=24), expected)
    assert len(calls) == lean.last_stats.draft_forwards > 0
    calls.clear()
    plain = Seq2SeqSpeculator(big, draft, lean_draft=False)
    assert_same(plain.generate(ids, mask, max_new_tokens=24), expected)
    assert not calls and plain.last_stats.draft_forwards > 0


def test_a_probe_that_disagrees_keeps_transformers_forward(monkeypatch):
    model = build_toy_model("t5-v1_1", seed=12, d_model=48, layers=2).eval()
    with torch.no_grad():  # position biases of a trained model's size (random ones are near zero)
        model.get_decoder().block[0].layer[0].SelfAttention.relative_attention_bias.weight.mul_(30)
    assert LeanT5Decoder.checked(model) is not None

    # a lean step that forgot the relative position bias must be caught by the probe
    def causal_only(self, past: int, length: int, dtype: torch.dtype) -> torch.Tensor:
        future = torch.arange(past, past + length)[:, None] < torch.arange(past + length)[None, :]
        return torch.zeros(1, 1, length, past + length, dtype=dtype).masked_fill(future, torch.finfo(dtype).min)

    monkeypatch.setattr(LeanT5Decoder, "_causal_bias", causal_only)
    assert LeanT5Decoder(model).probe_difference(model) > 1e-2
    assert LeanT5Decoder.checked(model) is None
    bart = build_toy_model("bart", seed=12)
    assert LeanT5Decoder.checked(bart) is None
    with pytest.raises(ValueError, match="T5 or MT5"):
        LeanT5Decoder(bart)


def test_the_lean_step_is_rebuilt_when_the_draft_changes(toy_models):
    big, draft = toy_models["t5-v1_1"]["big"], build_toy_model("t5-v1_1", seed=13, d_model=48, layers=1).eval()
    speculator = Seq2SeqSpeculator(big, draft)
    first = speculator._proposers.lean_step()
    assert first is not None and speculator._proposers.lean_step() is first
    with torch.no_grad():
        draft.lm_head.weight.mul_(1.5)  # changed in place: the fused copies would be stale
    second = speculator._proposers.lean_step()
    assert second is not None and second is not first
    draft.train()
    assert speculator._proposers.lean_step() is None  # dropout active: transformers' forward
    draft.eval()
    assert speculator._proposers.lean_step() is not None


def test_positions_beyond_the_bias_table_get_the_same_logits(monkeypatch):
    """Past ``CAUSAL_TABLE_SLOTS`` the step computes its position bias per call: the same logits either way."""
    model = build_toy_model("t5-v1_1", seed=11, d_model=48, layers=2).eval()
    with torch.no_grad():  # position biases of a trained model's size (random ones are near zero)
        model.get_decoder().block[0].layer[0].SelfAttention.relative_attention_bias.weight.mul_(30)
    monkeypatch.setattr(lean_t5, "CAUSAL_TABLE_SLOTS", 5)
    ids, mask = random_sources(3, seed=4)
    lean = LeanT5Decoder.checked(model, tolerance=TOLERANCE[torch.float32])
    assert lean is not None
    generator = torch.Generator().manual_seed(6)
    with torch.inference_mode():
        encoded = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state
        reference = DecoderRunner(model, family_of(model), encoded, mask)
        fast = DecoderRunner(model, family_of(model), encoded, mask, step=lean)
        for width in (1, 3, 1, 4, 2):  # slots 0-10: from inside the table to past it, across its edge
            tokens = torch.randint(3, model.config.vocab_size, (3, width), generator=generator)
            expected = reference.forward(tokens).log_softmax(-1)
            torch.testing.assert_close(fast.forward(tokens).log_softmax(-1), expected, atol=1e-4, rtol=1e-5)
    assert lean.bias_table.shape[-1] == 5
