"""The embedded Whisper base with the shipped distilled draft: the draft attaches to base (shared encoder and
embeddings) and the pair decodes exactly base's greedy output on real and synthetic speech."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.whisper.audio import load_audio
from seq2spec.whisper.draft import WHISPER_BASE_DRAFT_DIR, WHISPER_BASE_MULTILINGUAL_DRAFT_DIR, output_token_ids

SAMPLES = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples"
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
MULTILINGUAL = ("de", "es", "fr", "hi", "it", "ja", "nl", "pl", "pt", "ru", "sv", "tr", "uk", "zh")


def _base_installed() -> bool:
    from seq2spec.default_models import whisper_base_sources

    try:
        whisper_base_sources()
    except FileNotFoundError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _base_installed(), reason='the embedded base is not installed: "seq2spec[whisper]"')


@pytest.fixture(scope="module")
def pair():
    from seq2spec.default_models import load_whisper_base_pair

    return load_whisper_base_pair()


def test_the_shipped_whisper_pair_comes_complete_from_one_function(pair, tmp_path):
    """``shipped_whisper`` returns what ``seq2spec transcribe`` and ``seq2spec serve`` run by default."""
    from seq2spec.commands.main import build_parser
    from seq2spec.commands.transcribe import load_speculator
    from seq2spec.default_models import shipped_whisper
    from seq2spec.options import recommended_options

    shipped = shipped_whisper()
    assert shipped.draft is not None and shipped.options == recommended_options(shipped.draft) != {}
    assert shipped.tokenizer.feature_extractor is not None and shipped.spelling is None
    assert shipped_whisper(with_draft=False).draft is None
    args = build_parser().parse_args(["transcribe", "a.wav", "--out", "o.jsonl"])
    speculator = load_speculator(args)
    assert speculator.draft is not None and speculator.options == Seq2SeqSpeculator(*pair).options
    assert set(MULTILINGUAL) < set(shipped.language_drafts) and len(set(shipped.language_drafts.values())) == 1
    french = speculator.for_language("fr")
    assert french.draft is not speculator.draft and speculator.for_language("en") is speculator
    assert speculator.for_language("ja") is french and speculator.for_language("ko") is french
    from seq2spec.whisper.draft import draft_from_big_layers, save_whisper_draft

    folder = save_whisper_draft(draft_from_big_layers(pair[0], [1]), tmp_path / "mine")
    argv = ["transcribe", "a.wav", "--out", "o.jsonl", "--language-draft", f"fr={folder}"]
    mine = load_speculator(build_parser().parse_args(argv))  # the user's draft for French, the shipped for the others
    assert output_token_ids(mine.for_language("fr").draft) is None
    assert mine.for_language("de").draft is not mine.for_language("fr").draft is not mine.draft


@pytest.mark.parametrize("folder", [WHISPER_BASE_DRAFT_DIR, WHISPER_BASE_MULTILINGUAL_DRAFT_DIR])
def test_draft_is_shipped_small_and_described(folder):
    size = (folder / "decoder.safetensors").stat().st_size
    assert size < 20e6  # only the draft's own layers, fp16
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["draft_layers"] == 2 and metrics["steps"] > 0  # the recipe's record of the shipped draft
    assert 0.5 < metrics["agreement_heldout"] <= 1
    assert (folder / "MODEL_CARD.md").is_file()


def test_the_multilingual_draft_proposes_for_its_languages_given_or_detected(pair):
    """The shipped multilingual draft, for every language but English (the 14 it trained in and the rest): clips
    given German are proposed for by it, English clips whose language is detected by the English draft; every
    transcript is base's greedy one."""
    from seq2spec.default_models import whisper_base_language_drafts
    from seq2spec.whisper.transcription import transcribe_clips

    big, draft, processor = pair
    drafts = whisper_base_language_drafts(big)
    assert set(MULTILINGUAL) < set(drafts) and "en" not in drafts
    assert {"la", "gl", "ca", "ko"} <= set(drafts) and len(drafts) == len(big.generation_config.lang_to_id) - 1
    assert set(drafts.values()) == {str(WHISPER_BASE_MULTILINGUAL_DRAFT_DIR)}  # a folder, loaded when first needed
    speculator = Seq2SeqSpeculator(big, draft, processor, language_drafts=drafts)
    assert not speculator._by_language._made  # not loaded yet
    multilingual = speculator.for_language("fr").draft
    assert multilingual.model.decoder.embed_tokens is big.model.decoder.embed_tokens
    assert 16_384 < output_token_ids(multilingual).numel() < big.config.vocab_size
    assert speculator.for_language("ja").draft is multilingual
    calls: list[int] = []
    multilingual.model.decoder.register_forward_hook(lambda *_: calls.append(1))
    clips = [load_audio(p) for p in sorted(SAMPLES.glob("clip0[0-1]*.wav"))]

    def greedy(features, attention_mask, **options):
        return big.generate(features, attention_mask=attention_mask, **options)

    for language in ("de", None):
        expected = transcribe_clips(clips, processor, greedy, multilingual=True, language=language, max_new_tokens=48)
        assert speculator.transcribe(clips, 16_000, language=language, max_new_tokens=48) == expected and all(expected)
        assert bool(calls) == (language == "de")  # English detected: the English draft
        calls.clear()


def test_draft_shares_base_modules(pair):
    big, draft, _ = pair
    assert draft.model.decoder.embed_tokens is big.model.decoder.embed_tokens
    assert len(draft.model.decoder.layers) == 2
    # the shipped draft scores a subset of the vocabulary: its head holds base's rows for those tokens
    tokens = output_token_ids(draft)
    assert tokens is not None and 8000 < tokens.numel() < big.config.vocab_size
    assert torch.equal(draft.proj_out.weight, big.proj_out.weight[tokens])
    eot = big.generation_config.eos_token_id
    assert bool(torch.isin(torch.arange(eot, big.config.vocab_size), tokens).all())  # specials and timestamps


def test_pair_takes_a_saved_draft_folder(pair, tmp_path):
    from seq2spec.default_models import load_whisper_base_pair
    from seq2spec.whisper.draft import draft_from_big_layers, save_whisper_draft

    save_whisper_draft(draft_from_big_layers(pair[0], [1, 4]), tmp_path)
    big, draft, _ = load_whisper_base_pair(draft_dir=tmp_path)
    assert len(draft.model.decoder.layers) == 2 and output_token_ids(draft) is None  # that folder's, not the shipped
    assert torch.equal(draft.model.decoder.layers[1].fc1.weight, big.model.decoder.layers[4].fc1.weight)


def test_pair_decodes_base_greedy_exactly(pair):
    big, draft, processor = pair
    paths = sorted(SAMPLES.glob("clip0[0-3]*.wav")) + sorted(LIBRIVOX.glob("*.wav"))[:2]
    clips = [load_audio(p) for p in paths]
    features = processor.feature_extractor(clips, sampling_rate=16000, return_tensors="pt").input_features
    expected = big.generate(features, language="en", task="transcribe")
    speculator = Seq2SeqSpeculator(big, draft, processor)
    actual = speculator.generate(input_features=features, language="en", task="transcribe")
    assert actual.shape == expected.shape and torch.equal(actual, expected)
    stats = speculator.last_stats
    assert stats.draft_encoder_calls == 0
    assert stats.acceptance_rate > 0.5  # a trained draft, not a random one
    texts = processor.batch_decode(actual, skip_special_tokens=True)
    assert len({t.strip() for t in texts}) == len(texts) and all(t.strip() for t in texts)


def test_pair_with_fallback_and_previous_text_equals_generate(pair):
    """openai-whisper's settings (temperature fallback with its thresholds, conditioning on previous text) on two
    long recordings of different lengths: base's own generate and the pair agree token for token, and on the
    scores of each recording's first window."""
    from seq2spec.whisper.request import WhisperDecoding

    big, draft, processor = pair
    clips = [load_audio(p) for p in sorted(SAMPLES.glob("clip*.wav"))]
    recordings = [np.concatenate(clips), np.concatenate(clips[::-1] + clips[:3])]
    assert all(len(r) > 30 * 16000 for r in recordings) and len(recordings[0]) != len(recordings[1])
    features = processor.feature_extractor(
        recordings,
        sampling_rate=16000,
        return_tensors="pt",
        truncation=False,
        padding="longest",
        return_attention_mask=True,
    )
    decoding = WhisperDecoding(temperature_fallback=True, condition_on_previous_text=True, seed=0)
    kwargs = {"language": "en", "task": "transcribe", "return_timestamps": True, "return_segments": True}
    kwargs.update(attention_mask=features.attention_mask, **decoding.generate_arguments(processor))
    expected = big.generate(features.input_features, **kwargs)
    speculator = Seq2SeqSpeculator(big, draft, processor)
    actual = speculator.generate(input_features=features.input_features, seed=0, **kwargs)
    assert torch.equal(actual["sequences"], expected["sequences"])
    assert speculator.last_stats.acceptance_rate > 0.5
    for mine, theirs in zip(actual["segments"], expected["segments"], strict=True):
        assert len(mine) == len(theirs) >= 2
        first, reference = mine[0]["result"], theirs[0]["result"]
        generated = reference["sequences"][-len(reference["scores"]) :].tolist()
        end = generated.index(big.generation_config.eos_token_id) + 1  # this row's steps, up to its end
        torch.testing.assert_close(
            torch.stack(first["scores"])[:end].clamp(min=-1e4),
            torch.stack(reference["scores"])[:end].clamp(min=-1e4),
            rtol=1e-4,
            atol=1e-3,
        )


def test_word_timestamps_on_real_speech(pair):
    """Words of base's transcript with times from its alignment heads: the transcript's words, in order, inside
    the clip, and the same as base's own generate(return_token_timestamps=True) gives for the same tokens."""
    from seq2spec.whisper.transcription import words_of

    big, draft, processor = pair
    clips = [load_audio(p) for p in sorted(SAMPLES.glob("clip0[0-2]*.wav"))]
    speculator = Seq2SeqSpeculator(big, draft, processor)
    results = speculator.transcribe(clips, sampling_rate=16000, language="en", word_timestamps=True)
    features = processor.feature_extractor(clips, sampling_rate=16000, return_tensors="pt", return_attention_mask=True)
    expected = big.generate(
        features.input_features,
        attention_mask=features.attention_mask,
        language="en",
        task="transcribe",
        return_token_timestamps=True,
    )
    for row, (clip, result) in enumerate(zip(clips, results, strict=True)):
        words = result["words"]
        assert [w["word"] for w in words] == result["text"].split()
        assert all(0 <= w["start"] <= w["end"] <= len(clip) / 16000 + 0.1 for w in words)
        assert [w["start"] for w in words] == sorted(w["start"] for w in words)
        ids, times = expected["sequences"][row].tolist(), expected["token_timestamps"][row].tolist()
        reference = words_of(processor.tokenizer, ids, times)
        assert [w["word"] for w in reference] == [w["word"] for w in words]
        for mine, theirs in zip(words, reference, strict=True):
            assert abs(mine["start"] - theirs["start"]) <= 0.02 and abs(mine["end"] - theirs["end"]) <= 0.02


def test_word_times_are_in_the_file_s_time_after_the_first_window(pair):
    """On the 93-s sample (four 30-s windows), words after the first window are timed in the file's time, as the
    segments around them: base's token times count from each window's start. The starts equal those of base's own
    segments (``return_segments``, which carry each window's offset) for the same tokens."""
    from seq2spec.whisper.transcription import words_of

    big, draft, processor = pair
    audio = load_audio(SAMPLES / "long_form.wav")
    result = Seq2SeqSpeculator(big, draft, processor).transcribe(
        audio, sampling_rate=16000, language="en", return_timestamps=True, word_timestamps=True
    )
    words, segments = result["words"], result["segments"]
    assert [w["start"] for w in words] == sorted(w["start"] for w in words)
    assert words[-1]["end"] > 80 and words[-1]["end"] <= len(audio) / 16000
    for word in words:  # each inside a segment (the alignment may stray a little)
        assert any(s["start"] - 0.3 <= word["start"] and word["end"] <= s["end"] + 0.3 for s in segments), word
    features = processor.feature_extractor(
        audio, sampling_rate=16000, return_tensors="pt", truncation=False, padding="longest", return_attention_mask=True
    )
    theirs = big.generate(
        features.input_features, attention_mask=features.attention_mask, language="en", task="transcribe",
        return_timestamps=True, return_token_timestamps=True, return_segments=True,
    )["segments"][0]  # fmt: skip
    assert theirs[-1]["start"] > 60  # several windows
    reference = [
        w for s in theirs for w in words_of(processor.tokenizer, s["tokens"].tolist(), s["token_timestamps"].tolist())
    ]
    assert [w["word"] for w in reference] == [w["word"] for w in words]
    assert all(abs(mine["start"] - ref["start"]) <= 0.02 for mine, ref in zip(words, reference, strict=True))


def test_int8_mode_equals_int8_generate_on_long_form():
    """The int8 mode on the 90-s sample (two long recordings in one batch): tokens identical to the int8 base's own
    generate. Without the float64 decoder attention, last-bit differences of float32 attention cross int8 rounding
    steps here and change timestamp tokens."""
    from seq2spec.default_models import load_whisper_base_pair

    big, draft, processor = load_whisper_base_pair(dtype="int8")
    audio = [load_audio(SAMPLES / "long_form.wav"), load_audio(SAMPLES / "long_form.wav")[: 16000 * 47]]
    features = processor.feature_extractor(
        audio, sampling_rate=16000, return_tensors="pt", truncation=False, padding="longest", return_attention_mask=True
    )
    kwargs = {"attention_mask": features.attention_mask, "language": "en", "task": "transcribe"}
    expected = big.generate(features.input_features, return_timestamps=True, **kwargs)
    actual = Seq2SeqSpeculator(big, draft, processor).generate(
        input_features=features.input_features, return_timestamps=True, **kwargs
    )
    assert actual.shape == expected.shape and torch.equal(actual, expected)
    text = processor.batch_decode(actual, skip_special_tokens=True)[0]
    assert "morning train" in text.lower()
