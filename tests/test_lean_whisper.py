"""seq2spec.drafts.lean_whisper: the Whisper draft's lean step gives transformers' logits through the runner's cache
surgery, runs in int8 on the CPU without changing any output, and stands aside when its probe disagrees."""

from __future__ import annotations

import pytest
import torch
from toy_helpers import build_toy_whisper, toy_features

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding.families import family_of
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts.lean_whisper import LeanWhisperDraft
from seq2spec.whisper.draft import draft_from_big_layers, restrict_output_vocabulary


@pytest.fixture(scope="module")
def big():
    return build_toy_whisper(seed=0, decoder_layers=3)


def _subset_draft(big):
    special = torch.arange(big.generation_config.eos_token_id, big.config.vocab_size)
    ordinary = torch.arange(0, big.generation_config.eos_token_id, 2)
    return restrict_output_vocabulary(draft_from_big_layers(big, [0, 2]), torch.cat([ordinary, special]))


@pytest.mark.parametrize("subset", [False, True], ids=["full-head", "subset-head"])
def test_lean_step_gives_transformers_logits_through_rollback_and_row_drops(big, subset):
    draft = _subset_draft(big) if subset else draft_from_big_layers(big, [0, 2])
    lean = LeanWhisperDraft.checked(draft, int8=False)
    assert lean is not None and not lean.int8
    with torch.inference_mode():
        encoded = big.get_encoder()(toy_features(4, seed=4)).last_hidden_state
        reference = DecoderRunner(draft, family_of(draft), encoded, None)
        fast = DecoderRunner(draft, family_of(draft), encoded, None, step=lean)
        generator = torch.Generator().manual_seed(5)
        probe = DecoderRunner(draft, family_of(draft), encoded, None).forward(torch.zeros(4, 1, dtype=torch.long))
        scored = probe[0, 0] > torch.finfo(torch.float32).min  # the tokens the draft's head scores

        def both(tokens: torch.Tensor) -> None:
            expected = reference.forward(tokens)[..., scored].log_softmax(-1)
            actual = fast.forward(tokens)[..., scored].log_softmax(-1)
            torch.testing.assert_close(actual, expected, atol=1e-4, rtol=0)

        def tokens(rows: int, width: int) -> torch.Tensor:
            return torch.randint(0, big.generation_config.eos_token_id, (rows, width), generator=generator)

        both(tokens(4, 3))
        for runner in (reference, fast):  # rows keep 1, 3, 0 and 2 of the 3 tokens: per-row left padding
            runner.keep([1, 3, 0, 2], fed=3)
        both(tokens(4, 2))
        for runner in (reference, fast):
            runner.select([0, 2, 3])
        both(tokens(3, 3))
        for runner in (reference, fast):
            runner.keep([3, 1, 2], fed=3)
        both(tokens(3, 1))


@pytest.mark.parametrize("int8", [False, True], ids=["float", "int8"])
def test_speculator_runs_the_whisper_draft_through_the_lean_step_with_greedy_output(big, int8, monkeypatch):
    draft = _subset_draft(big)
    features = toy_features(5, seed=8)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    assert _varied(expected, big.generation_config.eos_token_id)
    calls = []
    original = LeanWhisperDraft.__call__

    def counted(self, *args, **kwargs):
        calls.append(self.int8)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LeanWhisperDraft, "__call__", counted)
    speculator = Seq2SeqSpeculator(big, draft, int8_draft=int8)
    assert speculator._proposers.lean_step() is not None
    calls.clear()  # the probe's own calls
    actual = speculator.generate(input_features=features, max_new_tokens=30, language="fr")
    assert torch.equal(actual, expected)
    assert len(calls) == speculator.last_stats.draft_forwards > 0 and set(calls) == {int8}
    assert speculator.last_stats.accepted_draft_tokens > 0
    calls.clear()
    plain = Seq2SeqSpeculator(big, draft, lean_draft=False)
    assert torch.equal(plain.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert not calls


def test_a_probe_that_disagrees_keeps_transformers_forward(big, monkeypatch):
    draft = draft_from_big_layers(big, [0, 1])
    assert LeanWhisperDraft.checked(draft) is not None
    # a lean step that forgot the position embeddings must be caught by the probe
    monkeypatch.setattr(LeanWhisperDraft, "__init__", _without_positions(LeanWhisperDraft.__init__))
    assert LeanWhisperDraft(draft).probe_difference(draft) > 1e-2
    assert LeanWhisperDraft.checked(draft) is None
    with pytest.raises(ValueError, match="WhisperForCausalLM"):
        LeanWhisperDraft(big)
    assert LeanWhisperDraft.checked(big) is None


def _without_positions(init):
    def patched(self, model, **kwargs):
        init(self, model, **kwargs)
        self.positions = torch.zeros_like(self.positions)

    return patched


def _varied(output: torch.Tensor, eos: int) -> bool:
    """Rows that differ and end at different steps, several tokens long: a fixture an equality test can fail on."""
    lengths = (output != eos).sum(dim=1)
    return len({tuple(row) for row in output.tolist()}) >= 3 and lengths.unique().numel() >= 2 and lengths.min() >= 5
