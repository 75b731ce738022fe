"""Whisper through Seq2SeqSpeculator: the same tensor as big.generate, short and long form, with a draft whose
encoder is the big model's."""

from __future__ import annotations

import pytest
import torch
from toy_helpers import build_toy_whisper, toy_features, whisper_draft_sharing_encoder

from seq2spec import Seq2SeqSpeculator

EOS = 256


@pytest.fixture(scope="module")
def whisper_pair():
    big = build_toy_whisper()
    return big, whisper_draft_sharing_encoder(big)


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape, (tuple(actual.shape), tuple(expected.shape))
    assert torch.equal(actual, expected), f"{actual}\n{expected}"


def ends(output: torch.Tensor) -> list[int]:
    return [row.index(EOS) if EOS in row else -1 for row in output.tolist()]


@pytest.mark.parametrize("rows", [1, 3, 8])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"language": "fr", "task": "transcribe"},
        {"language": "de", "task": "translate"},
        {"language": "en", "return_timestamps": True},
        {},
    ],
    ids=["fr-transcribe", "de-translate", "timestamps", "detect-language"],
)
def test_short_form_equals_generate(whisper_pair, rows, kwargs):
    big, draft = whisper_pair
    features = toy_features(rows, seed=rows)
    expected = big.generate(features, max_new_tokens=30, **kwargs)
    speculator = Seq2SeqSpeculator(big, draft)
    assert_same(speculator.generate(input_features=features, max_new_tokens=30, **kwargs), expected)
    stats = speculator.last_stats
    assert stats.draft_encoder_calls == 0  # the draft reads the big model's encoder output
    assert stats.accepted_draft_tokens > 0


def test_outputs_vary(whisper_pair):
    """The fixture is no constant model: rows differ and end at different steps."""
    big, _ = whisper_pair
    output = big.generate(toy_features(8, seed=8), max_new_tokens=30, language="fr")
    assert len({tuple(row) for row in output.tolist()}) >= 3
    assert len(set(ends(output))) >= 2


def test_clips_of_different_lengths(whisper_pair):
    """Padded shorter clips (silence-like features after their end), as the feature extractor produces them."""
    big, draft = whisper_pair
    features = toy_features(3, seed=4)
    for row, frames in enumerate((3000, 1200, 400)):
        features[row, :, frames:] = -1.5
    expected = big.generate(features, max_new_tokens=30, language="en")
    assert_same(
        Seq2SeqSpeculator(big, draft).generate(input_features=features, max_new_tokens=30, language="en"), expected
    )


def test_encoder_runs_once_per_window_batch(whisper_pair):
    big, draft = whisper_pair
    calls = []
    handle = big.model.encoder.register_forward_hook(lambda *_: calls.append(1))
    try:
        speculator = Seq2SeqSpeculator(big, draft)
        speculator.generate(
            input_features=toy_features(4, seed=9), max_new_tokens=20, language="en", return_timestamps=False
        )
    finally:
        handle.remove()
    assert len(calls) == speculator.last_stats.big_encoder_calls
    assert speculator.last_stats.draft_encoder_calls == 0


@pytest.mark.parametrize("rows", [1, 3])
def test_long_form_equals_generate(whisper_pair, rows):
    big, draft = whisper_pair
    frames = [7000, 4500, 6100][:rows]
    features = toy_features(rows, max(frames), seed=20 + rows)
    attention_mask = torch.zeros(rows, max(frames), dtype=torch.long)
    for row, length in enumerate(frames):
        attention_mask[row, :length] = 1
        features[row, :, length:] = 0.0
    kwargs = {"attention_mask": attention_mask, "return_timestamps": True, "language": "en"}
    expected = big.generate(features, **kwargs)
    speculator = Seq2SeqSpeculator(big, draft)
    assert_same(speculator.generate(input_features=features, **kwargs), expected)
    assert speculator.last_stats.big_encoder_calls >= 2  # several 30-second windows


def test_no_draft_and_errors(whisper_pair):
    big, _ = whisper_pair
    features = toy_features(2, seed=3)
    expected = big.generate(features, max_new_tokens=10, language="en")
    assert_same(Seq2SeqSpeculator(big).generate(input_features=features, max_new_tokens=10, language="en"), expected)
    with pytest.raises(ValueError, match="float \\[batch, mel bins, frames\\]"):
        Seq2SeqSpeculator(big).generate(input_features=torch.zeros(2, 80, dtype=torch.long))


def test_decoder_only_assistant(whisper_pair):
    """A WhisperForCausalLM draft (distil-whisper's assistant layout) reads the big model's encoder output."""
    from toy_helpers import whisper_causal_assistant

    big, _ = whisper_pair
    assistant = whisper_causal_assistant(big)
    features = toy_features(3, seed=31)
    for kwargs in ({"language": "fr"}, {"language": "en", "return_timestamps": True}):
        expected = big.generate(features, max_new_tokens=30, **kwargs)
        speculator = Seq2SeqSpeculator(big, assistant)
        assert_same(speculator.generate(input_features=features, max_new_tokens=30, **kwargs), expected)
        assert speculator.shares_encoder and speculator.last_stats.draft_encoder_calls == 0
        assert speculator.last_stats.accepted_draft_tokens > 0


def test_each_token_s_window_start_is_where_whisper_s_tokenizer_puts_its_segment(toy_whisper_dirs):
    """Three windows one after another, as Whisper's long form returns them: the first ends with a single timestamp
    (the next starts 30 s later), the second with two (the next starts at its last timestamp)."""
    from transformers import WhisperProcessor

    from seq2spec.whisper.transcription import window_offsets

    tokenizer = WhisperProcessor.from_pretrained(toy_whisper_dirs[0]).tokenizer
    begin = tokenizer.all_special_ids[-1] + 1

    def at(seconds: float) -> int:
        return begin + round(seconds / 0.02)

    a, b = tokenizer.encode(" a", add_special_tokens=False)[0], tokenizer.encode(" b", add_special_tokens=False)[0]
    ids = [at(0), a, b, at(5), at(5), a, at(8)]  # window 1: ends with a single timestamp
    ids += [at(0), b, at(2), at(2), a, at(4), at(4)]  # window 2, from 30 s: ends with two
    ids += [at(0), a, at(1)]  # window 3, from 34 s
    offsets = window_offsets(ids, begin)
    assert offsets == [0.0] * 7 + [30.0] * 7 + [34.0] * 3
    segments = tokenizer.decode(ids, output_offsets=True)["offsets"]
    timed = [token >= begin for token in ids]
    firsts = [i for i in range(len(ids) - 1) if timed[i] and (i == 0 or timed[i - 1]) and not timed[i + 1]]
    assert [s["timestamp"][0] for s in segments] == [(ids[i] - begin) * 0.02 + offsets[i] for i in firsts]
    assert window_offsets([a, b], begin) == [0.0, 0.0]
