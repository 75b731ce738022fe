"""seq2spec.drafts.graphed_whisper: the Whisper draft's fixed-size cache gives the lean step's logits through
rollbacks, padded prompts and dropped rows, keeps generate's output when the speculator runs on it, and stands aside
when its probe disagrees. On the CPU it runs eagerly (no CUDA graphs); tests/test_cuda.py replays the graphs."""

from __future__ import annotations

import pytest
import torch
from toy_helpers import build_toy_whisper, prompted_long_form, toy_features

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding import search as search_module
from seq2spec.decoding.families import family_of
from seq2spec.decoding.fast.captured_processing import CapturedStepProcessing
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts import graphed_whisper
from seq2spec.drafts.factory import ProposerFactory
from seq2spec.drafts.graphed_whisper import GraphedWhisperDraft, StaticDraftRunner
from seq2spec.drafts.lean_whisper import LeanWhisperDraft
from seq2spec.whisper.draft import draft_from_big_layers, restrict_output_vocabulary


@pytest.fixture(scope="module")
def big():
    return build_toy_whisper(seed=0, decoder_layers=3)


def _draft(big, subset: bool):
    draft = draft_from_big_layers(big, [0, 2])
    if not subset:
        return draft
    special = torch.arange(big.generation_config.eos_token_id, big.config.vocab_size)
    ordinary = torch.arange(0, big.generation_config.eos_token_id, 2)
    return restrict_output_vocabulary(draft, torch.cat([ordinary, special]))


@pytest.mark.parametrize("subset", [False, True], ids=["full-head", "subset-head"])
def test_fixed_cache_gives_the_lean_steps_logits(big, subset):
    draft = _draft(big, subset)
    lean = LeanWhisperDraft.checked(draft, int8=False)
    graphed = GraphedWhisperDraft.checked(lean, draft, graphs=False)
    assert graphed is not None and graphed.probe_difference(draft) < 1e-5
    with torch.inference_mode():
        encoded = big.get_encoder()(toy_features(4, seed=4)).last_hidden_state
        reference = DecoderRunner(draft, family_of(draft), encoded, None, step=lean)
        fixed = graphed.runner(encoded)
        scored = (reference.forward(torch.zeros(4, 1, dtype=torch.long))[0, 0] > -1e30).nonzero().squeeze(1)
        reference = DecoderRunner(draft, family_of(draft), encoded, None, step=lean)
        generator = torch.Generator().manual_seed(5)

        def both(rows: int, width: int) -> None:
            tokens = scored[torch.randint(0, scored.numel(), (rows, width), generator=generator)]
            expected = reference.forward(tokens)
            actual = fixed.forward(tokens)
            assert actual.shape == expected.shape
            assert torch.equal(actual == torch.finfo(torch.float32).min, expected == torch.finfo(torch.float32).min)
            torch.testing.assert_close(actual[..., scored], expected[..., scored], atol=1e-4, rtol=1e-4)

        for runner in (reference, fixed):
            runner.pad_prompt([0, 2, 1, 0])
        both(4, 3)
        for runner in (reference, fixed):
            runner.keep([3, 1, 0, 2], fed=3)
        both(4, 2)
        both(4, 1)
        for runner in (reference, fixed):  # a row leaves: it stays in the buffers, its results dropped
            runner.select([0, 2, 3])
            runner.keep([1, 3, 2], fed=3)
        both(3, 1)
        for runner in (reference, fixed):
            runner.select([2, 0])
            runner.keep([0, 1], fed=1)
        both(2, 4)
        assert fixed.cache_length == max(fixed.next_slot[row] for row in fixed.live)


def test_buffers_are_reused_only_when_free_and_positions_run_out_clearly(big):
    draft = _draft(big, subset=True)
    graphed = GraphedWhisperDraft(LeanWhisperDraft(draft), draft.config.max_target_positions, graphs=False)
    encoded = torch.randn(2, 9, big.config.d_model)
    first = graphed.runner(encoded)
    second = graphed.runner(encoded)  # the first runner still holds its buffers
    assert second.buffers is not first.buffers and graphed.caches[(2, 9)] is first.buffers
    buffers = first.buffers
    del first, second
    third = graphed.runner(encoded)  # a batch after the first one has ended
    assert third.buffers is buffers
    assert graphed.runner(torch.randn(3, 9, big.config.d_model)).buffers.rows == 3
    assert graphed.runner(torch.randn(1, 9, big.config.d_model)).buffers.rows == 1
    assert list(graphed.caches) == [(3, 9), (1, 9)]  # the two most recent batch sizes are kept
    with pytest.raises(ValueError, match="positions"):
        third.forward(torch.zeros(2, draft.config.max_target_positions + 1, dtype=torch.long))
    buffers.owner = None  # taken over elsewhere: the runner must not read another batch's cache
    with pytest.raises(RuntimeError, match="another batch"):
        third.forward(torch.zeros(2, 1, dtype=torch.long))
    runner = graphed.runner(encoded)
    runner.forward(torch.zeros(2, 1, dtype=torch.long))
    with pytest.raises(RuntimeError, match="before the first forward"):
        runner.pad_prompt([1, 0])


def test_a_probe_that_disagrees_keeps_the_lean_runner(big, monkeypatch):
    draft = _draft(big, subset=False)
    lean = LeanWhisperDraft(draft)
    assert GraphedWhisperDraft.checked(lean, draft, graphs=False) is not None
    original = graphed_whisper.static_step

    def skewed(lean, buffers, width):  # a step that forgot the prompt padding
        padding = buffers.padding.clone()
        buffers.padding.zero_()
        original(lean, buffers, width)
        buffers.padding.copy_(padding)

    monkeypatch.setattr(graphed_whisper, "static_step", skewed)
    assert GraphedWhisperDraft.checked(lean, draft, graphs=False) is None


def test_speculator_on_the_fixed_cache_keeps_greedy_output(big, monkeypatch):
    """Short clips, then long form with timestamps, previous-text conditioning and a prompt the draft reads (rows
    with prompts of different lengths: padded prompts), all identical to generate's; the draft's logits processing
    runs over fixed tensors too (what a CUDA device replays as a graph)."""
    monkeypatch.setattr(ProposerFactory, "static_draft_cache", lambda self, device: True)
    decode = search_module.speculative_decode
    monkeypatch.setattr(
        search_module,
        "speculative_decode",
        lambda *args, **kwargs: decode(*args, **{**kwargs, "capture_draft_processing": True}),
    )
    processed = []
    process = CapturedStepProcessing.__call__
    monkeypatch.setattr(
        CapturedStepProcessing, "__call__", lambda self, *args: processed.append(1) or process(self, *args)
    )
    forwards = []
    original = StaticDraftRunner.forward
    monkeypatch.setattr(StaticDraftRunner, "forward", lambda self, tokens: forwards.append(1) or original(self, tokens))
    draft = _draft(big, subset=True)
    assert Seq2SeqSpeculator(big, draft)._proposers.graphed_step(LeanWhisperDraft(draft, int8=True)) is None
    speculator = Seq2SeqSpeculator(big, draft, int8_draft=False)
    assert speculator._proposers.graphed_step(speculator._proposers.lean_step()) is not None
    features = toy_features(5, seed=8)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    processed.clear()
    eos = big.generation_config.eos_token_id
    lengths = (expected != eos).sum(dim=1)
    assert len({tuple(row) for row in expected.tolist()}) >= 3 and lengths.unique().numel() >= 2
    forwards.clear()
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert len(forwards) == speculator.last_stats.draft_forwards > 0
    assert speculator.last_stats.accepted_draft_tokens > 0
    assert len(processed) == speculator.last_stats.draft_forwards  # (the first step of a batch: eagerly as well)

    features, kwargs = prompted_long_form()
    expected = big.generate(features, **kwargs)
    for reads_prompt in (False, True):
        reading = Seq2SeqSpeculator(big, draft, int8_draft=False, draft_reads_prompt=reads_prompt)
        assert reading._proposers.graphed_step(reading._proposers.lean_step()) is not None
        forwards.clear()  # the probe's own forwards
        processed.clear()
        assert torch.equal(reading.generate(input_features=features, **kwargs), expected)
        assert len(forwards) == reading.last_stats.draft_forwards > 0
        assert len(processed) == reading.last_stats.draft_forwards


def test_the_fixed_cache_is_for_cuda_devices_unless_turned_off(big):
    draft = _draft(big, subset=True)
    default = Seq2SeqSpeculator(big, draft)._proposers
    assert default.static_draft_cache(torch.device("cuda")) and not default.static_draft_cache(torch.device("cpu"))
    assert default.graphed_step(default.lean_step()) is None  # this draft is on the CPU
    off = Seq2SeqSpeculator(big, draft, draft_cuda_graphs=False)._proposers
    assert not off.static_draft_cache(torch.device("cuda"))


def test_a_failed_capture_runs_that_width_eagerly(big, monkeypatch, caplog):
    """Where a graph cannot be captured (a width the probe did not cover), the step runs eagerly, same logits."""
    draft = _draft(big, subset=True)
    lean = LeanWhisperDraft(draft)
    eager = GraphedWhisperDraft(lean, draft.config.max_target_positions, graphs=False)
    failing = GraphedWhisperDraft(lean, draft.config.max_target_positions, graphs=True)

    def no_capture(self, buffers, width):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(GraphedWhisperDraft, "_capture", no_capture)
    encoded = torch.randn(2, 9, big.config.d_model)
    tokens = torch.randint(0, 200, (2, 3), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        expected = eager.runner(encoded).forward(tokens)
        runner = failing.runner(encoded)
        with caplog.at_level("WARNING"):
            actual = runner.forward(tokens)
        again = runner.forward(tokens[:, :1])
    assert torch.equal(actual, expected) and again.shape == (2, 1, expected.shape[-1])
    assert failing.eager_widths == {3, 1} and "running it eagerly" in caplog.text
