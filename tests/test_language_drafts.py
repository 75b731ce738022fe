"""A draft per language (``language_drafts``, ``--language-draft``) and a ``save_whisper_draft`` folder taken as a
draft: clips given a language are proposed for by that language's draft, every transcript stays ``big.generate``'s."""

from __future__ import annotations

import json

import pytest
import soundfile
from synthetic_audio import tone
from test_languages_per_clip import LANGUAGES, clips

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.main import build_parser, main
from seq2spec.whisper.draft import draft_from_big_layers, is_whisper_draft_folder, save_whisper_draft
from seq2spec.whisper.transcription import transcribe_clips


def counted(model) -> list[int]:
    """A list that grows by one at each forward of ``model``'s decoder."""
    calls: list[int] = []
    model.model.decoder.register_forward_hook(lambda *_: calls.append(1))
    return calls


def greedy_texts(speculator, audio, language):
    big = speculator.big

    def greedy(features, attention_mask, **options):
        return big.generate(features, attention_mask=attention_mask, **options)

    return transcribe_clips(audio, speculator.processor, greedy, multilingual=True, language=language)


def test_clips_given_a_language_are_proposed_for_by_its_draft(toy_whisper_dirs):
    big_dir, draft_dir = toy_whisper_dirs
    speculator = Seq2SeqSpeculator(str(big_dir), str(draft_dir), language_drafts={"fr": str(draft_dir)})
    french = speculator.for_language("fr")
    assert french is not speculator and french.big is speculator.big and french.draft is not speculator.draft
    assert speculator.for_language("<|fr|>") is french and speculator.for_language("French") is french
    assert speculator.for_language("de") is speculator and speculator.for_language(None) is speculator
    default_calls, french_calls = counted(speculator.draft), counted(french.draft)
    audio = clips()
    assert speculator.transcribe(audio, sampling_rate=16_000, language=LANGUAGES) == greedy_texts(
        speculator, audio, LANGUAGES
    )
    assert french_calls and default_calls  # the two French clips went to the French draft, the others to the default
    french_calls.clear(), default_calls.clear()
    speculator.transcribe(audio[:1], sampling_rate=16_000, language="fr")
    assert french_calls and not default_calls


def test_language_drafts_are_checked_when_given(toy_whisper_dirs):
    big_dir, draft_dir = toy_whisper_dirs
    shared = Seq2SeqSpeculator(str(big_dir), None, language_drafts={"fr": draft_dir, "Italian": str(draft_dir)})
    assert shared.for_language("fr") is shared.for_language("it") is not shared  # one draft loaded once
    assert shared.for_language("fr")._exact_forwards is shared._exact_forwards  # the big model's fast paths, shared
    with pytest.raises(ValueError, match="language_drafts: 'xx' is not a language Whisper knows"):
        Seq2SeqSpeculator(str(big_dir), str(draft_dir), language_drafts={"xx": str(draft_dir)})
    from seq2spec.commands.toys import build_toy_model

    t5 = build_toy_model("t5")
    with pytest.raises(ValueError, match="language_drafts are for Whisper models; the big model is t5"):
        Seq2SeqSpeculator(t5, None, language_drafts={"fr": t5})


def test_a_saved_whisper_draft_folder_is_a_draft(toy_whisper_dirs, tmp_path):
    big_dir, _ = toy_whisper_dirs
    plain = Seq2SeqSpeculator(str(big_dir), None)
    folder = save_whisper_draft(draft_from_big_layers(plain.big, [0]), tmp_path / "draft")
    assert is_whisper_draft_folder(folder) and not is_whisper_draft_folder(tmp_path)
    speculator = Seq2SeqSpeculator(plain.big, str(folder), plain.processor)
    assert speculator.draft.model.decoder.embed_tokens is plain.big.model.decoder.embed_tokens
    assert speculator.shares_encoder
    audio = clips()
    assert speculator.transcribe(audio, sampling_rate=16_000, language=LANGUAGES) == greedy_texts(
        speculator, audio, LANGUAGES
    )
    from seq2spec.commands.toys import build_toy_model

    with pytest.raises(ValueError, match="holds a draft for a Whisper model; the big model is t5"):
        Seq2SeqSpeculator(build_toy_model("t5"), str(folder))


def test_the_command_takes_a_draft_per_language(toy_whisper_dirs, tmp_path):
    big_dir, draft_dir = toy_whisper_dirs
    audio = tmp_path / "audio"
    audio.mkdir()
    for index, name in enumerate(("a.wav", "b.wav")):
        soundfile.write(audio / name, tone(1.0 + index, 16_000, 1, index + 1), 16_000)
    language_map = tmp_path / "languages.tsv"
    language_map.write_text("audio/a.wav\tfr\naudio/b.wav\tde\n", encoding="utf-8")
    argv = ["transcribe", str(audio), "--model", str(big_dir), "--assistant", str(draft_dir)]
    argv += ["--language-map", str(language_map)]
    outputs = {}
    for name, extra in (("plain", []), ("routed", ["--language-draft", f"fr={draft_dir}"])):
        out = tmp_path / f"{name}.jsonl"
        assert main([*argv, "--out", str(out), *extra]) == 0
        outputs[name] = sorted((r["file"], r["text"]) for r in map(json.loads, out.read_text().splitlines()))
    assert outputs["routed"] == outputs["plain"]
    parsed = build_parser().parse_args([*argv, "--out", "o", "--language-draft", f"French={draft_dir}"])
    assert parsed.language_draft == [("fr", str(draft_dir))]
    for bad in ("fr", f"xx={draft_dir}", "=x"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([*argv, "--out", "o", "--language-draft", bad])
