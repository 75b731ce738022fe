"""Whisper's full generate through the speculator: scores, prompts of different lengths per row, temperature fallback.

Everything is compared with ``big.generate`` called with the same arguments on a toy Whisper whose outputs vary.
Greedy passes must give identical tokens and scores equal within float tolerance; fallback must pick the same windows
as ``big.generate``; the sampled replacement passes must follow the big model's sampling distribution.
"""

from __future__ import annotations

import pytest
import torch
from test_sampling import chi_square_p_value, outcome_probabilities
from toy_helpers import build_toy_whisper, toy_features, whisper_draft_sharing_encoder
from transformers.generation.logits_process import WhisperNoSpeechDetection

from seq2spec import Seq2SeqSpeculator

EOS = 256
PROMPT = torch.tensor([259, 40, 41, 42, 43])  # <|startofprev|> and four text tokens


@pytest.fixture(scope="module")
def whisper_pair():
    big = build_toy_whisper()
    return big, whisper_draft_sharing_encoder(big)


def long_form(rows: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    frames = [7000, 4500, 6100][:rows]
    features = toy_features(rows, max(frames), seed=seed)
    attention_mask = torch.zeros(rows, max(frames), dtype=torch.long)
    for row, length in enumerate(frames):
        attention_mask[row, :length] = 1
        features[row, :, length:] = 0.0
    return features, attention_mask


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape, (tuple(actual.shape), tuple(expected.shape))
    assert torch.equal(actual, expected), f"{actual}\n{expected}"


class FallbackDecisions:
    """Records Whisper's own fallback decisions, (temperature, needs fallback, skip), as generate makes them, and
    the no-speech probability each was made with."""

    def __init__(self, model, monkeypatch) -> None:
        self.decisions: list[tuple[float, bool, bool]] = []
        self.no_speech: list[float] = []
        self.log_probs: list[float] = []
        original = type(model)._need_fallback

        def recording(model_self, seek_sequence, seek_outputs, index, logits_processor, *args):
            needs, skip = original(model_self, seek_sequence, seek_outputs, index, logits_processor, *args)
            self.decisions.append((args[-1], needs, skip))
            if "scores" in seek_outputs[index]:
                log_prob = model_self._retrieve_avg_logprobs(seek_outputs[index]["scores"], seek_sequence, args[-1])
                self.log_probs.append(float(log_prob))
            detector = [p for p in logits_processor if isinstance(p, WhisperNoSpeechDetection)]
            if detector:
                self.no_speech.append(float(detector[0].no_speech_prob[index]))
            return needs, skip

        monkeypatch.setattr(type(model), "_need_fallback", recording)

    def take(self) -> list[tuple[float, bool, bool]]:
        taken, self.decisions, self.log_probs = self.decisions, [], []
        return taken

    def take_log_probs(self) -> list[float]:
        taken, self.log_probs, self.decisions = self.log_probs, [], []
        return taken

    def take_no_speech(self) -> list[float]:
        taken, self.no_speech = self.no_speech, []
        return taken


@pytest.mark.parametrize("rows", [1, 4])
def test_scores_and_logits_equal_generate(whisper_pair, rows):
    big, draft = whisper_pair
    features = toy_features(rows, seed=5)
    kwargs = {"language": "en", "max_new_tokens": 30, "return_dict_in_generate": True}
    kwargs.update(output_scores=True, output_logits=True)
    expected = big.generate(features, **kwargs)
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=features, **kwargs)
    assert_same(actual.sequences, expected.sequences)
    assert len(actual.scores) == len(expected.scores) == len(actual.logits)
    generated = expected.sequences[:, -len(expected.scores) :].tolist()
    ends = [row.index(EOS) + 1 if EOS in row else len(row) for row in generated]
    if rows > 1:
        assert len(set(ends)) > 1  # rows end at different steps: later steps of a finished row are not compared
    for name in ("scores", "logits"):
        mine, theirs = torch.stack(getattr(actual, name), 1), torch.stack(getattr(expected, name), 1)
        for row, end in enumerate(ends):
            finite = torch.isfinite(theirs[row, :end])
            assert torch.equal(finite, torch.isfinite(mine[row, :end]))  # the same tokens suppressed
            torch.testing.assert_close(mine[row, :end][finite], theirs[row, :end][finite], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"condition_on_prev_tokens": True},
        {"prompt_ids": PROMPT},
        {"prompt_ids": PROMPT, "condition_on_prev_tokens": True},
        {"prompt_ids": PROMPT, "condition_on_prev_tokens": True, "prompt_condition_type": "all-segments"},
    ],
    ids=["previous-text", "prompt", "prompt-and-previous-text", "prompt-all-segments"],
)
def test_prompts_long_form_equal_generate(whisper_pair, rows, kwargs, monkeypatch):
    """Per-row decoder prompts of different lengths (left-padded by Whisper) decode as in big.generate."""
    big, draft = whisper_pair
    features, attention_mask = long_form(rows, seed=23)
    prompts = []
    original = type(big)._prepare_decoder_input_ids

    def recording(*args, **inner):  # the prompts Whisper builds, to check that rows really differ in length
        ids, extra = original(*args, **inner)
        mask = extra.get("decoder_attention_mask")
        prompts.append(None if mask is None else mask.sum(dim=1).tolist())
        return ids, extra

    monkeypatch.setattr(type(big), "_prepare_decoder_input_ids", staticmethod(recording))
    common = {"attention_mask": attention_mask, "return_timestamps": True, "language": "en", **kwargs}
    expected = big.generate(features, **common)
    speculator = Seq2SeqSpeculator(big, draft)
    assert_same(speculator.generate(input_features=features, **common), expected)
    if rows > 1 and "prompt_ids" not in kwargs:  # previous text alone: rows' prompts differ in length
        assert any(lengths is not None and len(set(lengths)) > 1 for lengths in prompts), prompts


@pytest.mark.parametrize("draft_kind", ["seq2seq", "causal-lean"])
def test_draft_reading_the_prompt(whisper_pair, draft_kind):
    """A draft told to read previous text gets the left-padded prompts too (the lean Whisper step included)."""
    from toy_helpers import whisper_causal_assistant

    big, draft = whisper_pair
    if draft_kind == "causal-lean":
        draft = whisper_causal_assistant(big)
    features, attention_mask = long_form(3, seed=23)
    common = {"attention_mask": attention_mask, "return_timestamps": True, "language": "en"}
    common.update(condition_on_prev_tokens=True, prompt_ids=PROMPT)
    expected = big.generate(features, **common)
    speculator = Seq2SeqSpeculator(big, draft, draft_reads_prompt=True)
    assert_same(speculator.generate(input_features=features, **common), expected)
    assert speculator.last_stats.accepted_draft_tokens > 0


def test_no_speech_detection_reads_the_first_forward(whisper_pair, monkeypatch):
    """Whisper's no-speech probability, taken from the loop's first big forward instead of an extra forward of
    the whole model: equal to generate's within float tolerance, so the same windows are skipped."""
    big, draft = whisper_pair
    features = toy_features(6, seed=50)
    recorder = FallbackDecisions(big, monkeypatch)
    common = {"language": "en", "max_new_tokens": 20, "temperature": (0.0,), "logprob_threshold": 0.0}
    for kwargs in ({}, {"prompt_ids": PROMPT}):
        big.generate(features, no_speech_threshold=0.5, **common, **kwargs)
        probabilities = recorder.take_no_speech()
        recorder.take()
        ordered = sorted(probabilities)
        middle = len(ordered) // 2
        threshold = (ordered[middle - 1] + ordered[middle]) / 2  # half the windows count as silent
        expected = big.generate(features, no_speech_threshold=threshold, **common, **kwargs)
        reference, reference_probabilities = recorder.take(), recorder.take_no_speech()
        speculator = Seq2SeqSpeculator(big, draft)
        actual = speculator.generate(input_features=features, no_speech_threshold=threshold, **common, **kwargs)
        assert recorder.take() == reference
        torch.testing.assert_close(recorder.take_no_speech(), reference_probabilities, rtol=1e-3, atol=0.0)
        assert {skip for _, _, skip in reference} == {True, False}  # some windows skipped, some kept
        assert_same(actual, expected)


@pytest.mark.parametrize("form", ["short", "long", "long-previous-text"])
def test_token_timestamps_equal_generate(whisper_pair, form):
    """Word timing: Whisper's DTW over the alignment heads' cross-attention, which the speculator computes in one
    forward over the decoded tokens; timestamps equal to generate's within 0.02 s, segments alike."""
    big, draft = whisper_pair
    if form == "short":
        features, extra = toy_features(3, seed=5), {"max_new_tokens": 30}
        extra["attention_mask"] = torch.ones(3, 3000, dtype=torch.long)
        extra["attention_mask"][1, 2000:] = 0  # a shorter clip: its own frames only
    else:
        features, attention_mask = long_form(3, seed=23)
        extra = {"attention_mask": attention_mask, "return_timestamps": True, "return_segments": True}
        if form == "long-previous-text":
            extra["condition_on_prev_tokens"] = True
    kwargs = {"language": "en", "return_token_timestamps": True, **extra}
    expected = big.generate(features, **kwargs)
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=features, **kwargs)
    assert_same(actual["sequences"], expected["sequences"])
    assert actual["token_timestamps"].shape == expected["token_timestamps"].shape
    assert (actual["token_timestamps"] - expected["token_timestamps"]).abs().max() <= 0.02
    assert len(set(expected["token_timestamps"][0].tolist())) > 3  # times that vary along the row
    if "segments" in expected:
        for mine, theirs in zip(actual["segments"], expected["segments"], strict=True):
            assert [s["tokens"].tolist() for s in mine] == [s["tokens"].tolist() for s in theirs]
            for segment, reference in zip(mine, theirs, strict=True):
                assert (segment["token_timestamps"] - reference["token_timestamps"]).abs().max() <= 0.02


def test_prompt_short_form_equal_generate(whisper_pair):
    big, draft = whisper_pair
    features = toy_features(3, seed=12)
    kwargs = {"language": "en", "max_new_tokens": 20, "prompt_ids": PROMPT}
    expected = big.generate(features, **kwargs)
    assert_same(Seq2SeqSpeculator(big, draft).generate(input_features=features, **kwargs), expected)


@pytest.mark.parametrize("form", ["short", "long"])
def test_fallback_picks_the_same_windows(whisper_pair, form, monkeypatch):
    """A log-prob threshold between the rows' values makes some greedy passes fail: the same ones as in generate.
    With a single temperature nothing is sampled and the whole output is generate's; with openai-whisper's ladder
    the first window batch decides alike and rows that never fell back are identical."""
    big, draft = whisper_pair
    if form == "short":
        features, extra = toy_features(4, seed=40), {"max_new_tokens": 30}
    else:
        features, attention_mask = long_form(3, seed=23)
        extra = {"attention_mask": attention_mask, "return_timestamps": True}
    recorder = FallbackDecisions(big, monkeypatch)
    big.generate(features, language="en", temperature=(0.0,), logprob_threshold=-1e9, **extra)
    first = sorted(recorder.take_log_probs()[: features.shape[0]])  # the first window batch's greedy passes
    threshold = (first[1] + first[2]) / 2  # two of them fall back
    thresholds = {"logprob_threshold": threshold, "compression_ratio_threshold": 2.4, "no_speech_threshold": 0.6}
    common = {"language": "en", **extra, **thresholds}

    expected = big.generate(features, temperature=(0.0,), **common)
    reference = recorder.take()
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=features, temperature=(0.0,), **common)
    assert recorder.take() == reference
    assert {needs for _, needs, _ in reference} == {True, False}  # some windows fail, some pass
    assert_same(actual, expected)

    ladder = (0.0, 0.2, 0.4)
    torch.manual_seed(0)
    expected = big.generate(features, temperature=ladder, **common)
    reference = recorder.take()
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=features, temperature=ladder, seed=0, **common)
    mine = recorder.take()
    rows = features.shape[0]
    assert mine[:rows] == reference[:rows]  # the first greedy pass of every row
    assert any(temperature > 0 for temperature, _, _ in mine)  # sampled passes ran
    if form == "short":
        for row, (_, needs, _) in enumerate(reference[:rows]):
            if not needs:  # decoded greedily only: generate's tokens (the batch's padding after them aside)
                pad = big.generation_config.pad_token_id
                assert torch.equal(_without_padding(actual[row], pad), _without_padding(expected[row], pad))


def _without_padding(row: torch.Tensor, pad: int) -> torch.Tensor:
    """``row`` without the padding after its last token (as wide as the batch's longest row made it)."""
    end = len(row)
    while end and int(row[end - 1]) == pad:
        end -= 1
    return row[:end]


SAMPLES = 2_000
HORIZON = 2


@torch.inference_mode()
def test_sampled_fallback_keeps_the_distribution():
    """Every greedy pass fails (threshold 0), so each row is the 0.7-temperature sample: its first tokens must follow
    the big model's processed distribution, computed exactly with the processors generate builds."""
    big = build_toy_whisper(max_source_positions=100)  # 200-frame windows: a cheap encoder for many samples
    draft = whisper_draft_sharing_encoder(big)
    features = toy_features(1, 200, seed=77)
    kwargs = {"language": "en", "max_new_tokens": HORIZON, "logprob_threshold": 0.0}
    captured = {}

    def capture(model, input_ids, logits_processor, stopping_criteria, generation_config, **model_kwargs):
        if generation_config.do_sample:
            captured.update(prompt=input_ids, processors=logits_processor, encoder=model_kwargs["encoder_outputs"])
        return model._sample(input_ids, logits_processor, stopping_criteria, generation_config, **model_kwargs)

    big.generate(features, temperature=(0.0, 0.7), custom_generate=capture, **kwargs)

    def distribution(prefix: tuple[int, ...]) -> torch.Tensor:
        ids = torch.cat([captured["prompt"], torch.tensor([prefix], dtype=torch.long)], dim=1)
        logits = big(encoder_outputs=captured["encoder"], decoder_input_ids=ids).logits[:, -1].float()
        return torch.softmax(captured["processors"](ids, logits), dim=-1)[0]

    expected = outcome_probabilities(distribution, HORIZON, EOS, min_probability=1e-6)
    assert len(expected) >= 8  # a distribution with real spread

    speculator = Seq2SeqSpeculator(big, draft, num_draft_tokens=2, adaptive=False)
    samples = []
    for batch in range(SAMPLES // 250):
        output = speculator.generate(
            input_features=features.repeat(250, 1, 1), temperature=(0.0, 0.7), seed=batch, **kwargs
        )
        for row in output[:, -HORIZON:].tolist():
            samples.append(tuple(row[: row.index(EOS) + 1] if EOS in row else row))
    p_value = chi_square_p_value(samples, expected)
    assert p_value > 1e-4, p_value


def test_unsupported_settings_are_named(whisper_pair):
    big, _ = whisper_pair
    features = toy_features(2, seed=3)
    speculator = Seq2SeqSpeculator(big)
    with pytest.raises(ValueError, match="beam search"):
        speculator.generate(input_features=features, num_beams=2, language="en")
    with pytest.raises(NotImplementedError, match="hidden states"):
        speculator.generate(input_features=features, output_hidden_states=True, language="en")
    with pytest.raises(ValueError, match="temperature must be"):
        speculator.generate(input_features=features, temperature=(0.0, -1.0), language="en")
    with pytest.raises(ValueError, match="only apply when sampling"):
        speculator.generate(input_features=features, seed=1, language="en")
