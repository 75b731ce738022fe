"""A language per clip: the library's ``language=[...]``, the command's ``--language-map``, and their errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile
import torch
from synthetic_audio import tone
from toy_helpers import toy_features

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.main import main
from seq2spec.whisper.transcription import languages_per_clip, transcribe_clips

LANGUAGES = ["fr", None, "de", "fr", None, "en"]  # the toy model speaks en, fr and de


@pytest.fixture(scope="module")
def speculator(toy_whisper_dirs):
    big_dir, draft_dir = toy_whisper_dirs
    return Seq2SeqSpeculator(str(big_dir), str(draft_dir))


def clips() -> list[np.ndarray]:
    """Loud and quiet noise, low and high tones: signals the toy model gives different texts."""
    return [tone(1.0 + i % 3, 16_000, 1, i).astype(np.float32) for i in range(len(LANGUAGES))]


MARKS = {"fr": 70, "de": 71, "en": 72, None: 73}


def marking_generate(calls: list[tuple[int, object]]):
    """A fake generate that answers each row with a token naming the language its row was given (a list: one per
    row), so the texts show where each clip went; ``calls`` gets each call's rows and language."""

    def generate(features, attention_mask, **options):
        language = options.get("language")
        calls.append((len(features), language))
        per_row = language if isinstance(language, list) else [language] * len(features)
        return torch.tensor([[MARKS[code]] for code in per_row])

    return generate


def test_clips_given_codes_are_one_batch_each_row_with_its_own(speculator):
    """The clips given a code are batched together, generate given one language per row; the clips to detect are
    a batch of their own (Whisper's generate takes no None in its list)."""
    calls: list[tuple[int, object]] = []
    audio = clips()
    texts = transcribe_clips(audio, speculator.processor, marking_generate(calls), multilingual=True,
                             language=LANGUAGES)  # fmt: skip
    decode = speculator.processor.tokenizer.decode
    assert texts == [decode([MARKS[code]]).strip() for code in LANGUAGES]
    assert len(set(texts)) == 4
    assert calls == [(4, ["fr", "fr", "de", "en"]), (2, None)]  # rows in order of length: 1, 1, 3, 3 s
    calls.clear()
    transcribe_clips(audio, speculator.processor, marking_generate(calls), multilingual=True, batch_size=3,
                     language=["de", "fr", "de", "fr", "en", "fr"])  # fmt: skip
    assert calls == [(3, ["de", "fr", "fr"]), (3, ["en", "de", "fr"])]  # the list follows each batch's rows


def test_with_batched_long_form_the_clips_of_each_code_go_apart(speculator, monkeypatch):
    """Speech pieces of many clips are decoded together: those of one entry at a time (here each clip one piece)."""
    from seq2spec.whisper import transcription

    monkeypatch.setattr(transcription, "transcribe_in_pieces", lambda clips, decode, *rest: decode(clips))
    calls: list[tuple[int, object]] = []
    transcribe_clips(clips(), speculator.processor, marking_generate(calls), multilingual=True, language=LANGUAGES,
                     long_form="batched")  # fmt: skip
    assert calls == [(2, "fr"), (2, None), (1, "de"), (1, "en")]


def test_long_files_given_different_languages_decode_as_one_batch_as_each_alone(speculator):
    """Long form (timestamps, windows after windows) with a language per row: each file's transcript is
    ``big.generate``'s for it alone in its language."""
    big = speculator.big
    audio = [tone(36.0 + 4 * i, 16_000, 1, i + 2).astype(np.float32) for i in range(4)]
    given = ["fr", "de", "de", "fr"]

    def greedy(features, attention_mask, **options):
        return big.generate(features, attention_mask=attention_mask, **options)

    alone = [
        transcribe_clips(
            [clip], speculator.processor, greedy, multilingual=True, language=code, return_timestamps=True
        )[0]
        for clip, code in zip(audio, given, strict=True)
    ]
    batches: list[int] = []
    generate = speculator.generate

    def counted(*arguments, **options):
        batches.append(len(arguments[0] if arguments else options["input_features"]))
        return generate(*arguments, **options)

    speculator.generate = counted
    try:
        together = speculator.transcribe(audio, sampling_rate=16_000, language=given, return_timestamps=True)
    finally:
        del speculator.generate
    assert together == alone
    assert batches == [4]
    assert len({result["text"] for result in alone}) > 1


def test_a_language_list_gives_big_generate_s_text_for_each_clip(speculator):
    big = speculator.big

    def greedy(features, attention_mask, **options):
        return big.generate(features, attention_mask=attention_mask, **options)

    audio = clips()
    expected = transcribe_clips(audio, speculator.processor, greedy, multilingual=True, language=LANGUAGES)
    assert speculator.transcribe(audio, sampling_rate=16_000, language=LANGUAGES) == expected
    alone = [
        speculator.transcribe(clip, sampling_rate=16_000, language=code)
        for clip, code in zip(audio, LANGUAGES, strict=True)
    ]
    assert alone == expected


def test_rows_of_one_batch_in_different_given_languages_equal_generate(speculator):
    """Whisper's generate takes one language per row: the speculative path keeps each row's own prompt."""
    big = speculator.big
    features = toy_features(3, seed=3)
    for language in (["fr", "de", "en"], ["de", "de", "fr"]):
        expected = big.generate(features, max_new_tokens=20, language=language)
        actual = speculator.generate(input_features=features, max_new_tokens=20, language=language)
        assert torch.equal(actual, expected)
        assert len({tuple(row) for row in expected.tolist()}) >= 2  # rows differ: the comparison can fail


def test_detection_in_a_batch_of_mixed_rows_equals_generate(speculator):
    """``language=None``: each row of one batch gets its own detected language, as in big.generate."""
    big = speculator.big
    features = toy_features(8, seed=4)
    expected = big.generate(features, max_new_tokens=20)
    actual = speculator.generate(input_features=features, max_new_tokens=20)
    assert torch.equal(actual, expected)
    assert len(set(expected[:, 0].tolist())) >= 2  # rows detected as different languages


@pytest.mark.parametrize(
    ("language", "error", "message"),
    [
        (["fr"], ValueError, "1 entries for 6 clips"),
        (("fr",) * 7, ValueError, "7 entries for 6 clips"),
        (["fr", 3, None, None, None, None], TypeError, r"language\[1\]"),
        ({"fr"}, TypeError, "one per clip"),
    ],
)
def test_a_wrong_language_list_is_refused_by_name(speculator, language, error, message):
    with pytest.raises(error, match=message):
        speculator.transcribe(clips(), sampling_rate=16_000, language=language)


def test_a_single_code_or_none_is_one_value_for_every_clip():
    assert languages_per_clip("fr", 3) is None
    assert languages_per_clip(None, 3) is None
    assert languages_per_clip(("fr", None), 2) == ["fr", None]


@pytest.fixture()
def folder(tmp_path):
    audio = tmp_path / "audio"
    (audio / "talks").mkdir(parents=True)
    for index, name in enumerate(("a.wav", "b.wav", "talks/c.wav")):
        soundfile.write(audio / name, tone(1.0 + index, 16_000, 1, index + 1), 16_000)
    return audio


def run_command(toy_whisper_dirs, folder, out, *extra: str) -> int:
    big_dir, draft_dir = toy_whisper_dirs
    return main(["transcribe", str(folder), "--out", str(out), "--model", str(big_dir), "--assistant",
                 str(draft_dir), *extra])  # fmt: skip


def test_language_map_gives_files_their_language_and_the_rest_the_default(toy_whisper_dirs, folder, speculator):
    language_map = folder.parent / "languages.tsv"
    language_map.write_text("# file\tlanguage\naudio/a.wav\tfr\n\naudio/talks/c.wav\tGerman\n", encoding="utf-8")
    out = folder.parent / "out.jsonl"
    assert run_command(toy_whisper_dirs, folder, out, "--language-map", str(language_map), "--language", "en") == 0
    records = {json.loads(line)["file"].rsplit("/", 1)[-1]: json.loads(line) for line in out.read_text().splitlines()}
    assert {name: record["language"] for name, record in records.items()} == {"a.wav": "fr", "b.wav": "en",
                                                                               "c.wav": "de"}  # fmt: skip
    for name, code in (("a.wav", "fr"), ("b.wav", "en"), ("talks/c.wav", "de")):
        path = folder / name
        assert records[path.name]["text"] == speculator.transcribe(str(path), language=code)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("audio/a.wav\txx\n", "'xx' is not a language Whisper knows"),
        ("audio/a.wav fr\n", "expected 'audio path<TAB>language code'"),
        ("\tfr\n", "expected 'audio path<TAB>language code'"),
    ],
)
def test_a_bad_language_map_stops_before_any_decoding(toy_whisper_dirs, folder, capsys, lines, message):
    language_map = folder.parent / "languages.tsv"
    language_map.write_text(lines, encoding="utf-8")
    out = folder.parent / "out.jsonl"
    assert run_command(toy_whisper_dirs, folder, out, "--language-map", str(language_map)) == 2
    error = capsys.readouterr().err
    assert message in error and "languages.tsv:1" in error
    assert not out.exists()


def test_a_language_the_model_does_not_speak_is_refused_before_decoding(toy_whisper_dirs, folder, capsys):
    language_map = folder.parent / "languages.tsv"
    language_map.write_text("audio/a.wav\tes\n", encoding="utf-8")
    out = folder.parent / "out.jsonl"
    assert run_command(toy_whisper_dirs, folder, out, "--language-map", str(language_map)) == 2
    assert "this model does not speak es" in capsys.readouterr().err
    assert not out.exists()


def test_an_unknown_language_is_refused_by_name(toy_whisper_dirs, folder, capsys):
    out = folder.parent / "out.jsonl"
    assert run_command(toy_whisper_dirs, folder, out, "--language", "klingon") == 2
    assert "--language: 'klingon' is not a language Whisper knows" in capsys.readouterr().err
    assert not out.exists()
