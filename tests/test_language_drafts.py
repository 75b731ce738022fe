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
from seq2spec.commands.toys import build_toy_model
from seq2spec.whisper.draft import draft_from_big_layers, is_whisper_draft_folder, save_whisper_draft
from seq2spec.whisper.transcription import batch_features, transcribe_clips


def counted(model) -> list[int]:
    """A list that grows at each forward of ``model``'s decoder by the rows it decoded."""
    calls: list[int] = []
    model.model.decoder.register_forward_hook(lambda module, inputs, output: calls.append(output[0].shape[0]))
    return calls


def greedy_texts(speculator, audio, language, **request):
    big = speculator.big

    def greedy(features, attention_mask, **options):
        return big.generate(features, attention_mask=attention_mask, **options)

    return transcribe_clips(audio, speculator.processor, greedy, multilingual=True, language=language, **request)


def test_clips_given_a_language_are_proposed_for_by_its_draft(toy_whisper_dirs, monkeypatch):
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
    # sampling (a fallback pass) with a draft per row group: near zero temperature, each row is greedy's
    features = speculator.processor.feature_extractor(audio, sampling_rate=16_000, return_tensors="pt").input_features
    languages = (["fr", "de", "en"] * len(audio))[: len(audio)]
    greedy = speculator.big.generate(features, language=languages, max_new_tokens=12)
    from seq2spec.drafts.row_groups import RowGroupProposer

    merged, original = [], RowGroupProposer._merged
    monkeypatch.setattr(
        RowGroupProposer, "_merged", lambda self, parts: merged.append(original(self, parts)) or merged[-1]
    )
    sampled = speculator.generate(
        features, language=languages, max_new_tokens=12, do_sample=True, temperature=1e-4, seed=0
    )
    assert sampled.tolist() == greedy.tolist() and speculator.last_stats.big_encoder_calls == 1
    assert merged and all(proposal.draft_probs is not None for proposal in merged)  # the groups' q, merged


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
    routed = Seq2SeqSpeculator(plain.big, None, plain.processor, language_drafts={"fr": folder, "de": str(folder)})
    assert not routed._by_language._made  # a folder is loaded when a clip first needs it
    assert routed.for_language("fr").draft.model.decoder.embed_tokens is plain.big.model.decoder.embed_tokens
    from toy_helpers import build_toy_whisper

    other = save_whisper_draft(draft_from_big_layers(build_toy_whisper(max_target_positions=32), [0]), tmp_path / "o")
    with pytest.raises(ValueError, match="made for max_target_positions=32"):  # refused when given, not when first used
        Seq2SeqSpeculator(plain.big, None, plain.processor, language_drafts={"fr": other})
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


def detecting_two_languages(big, audio, scale: bool = True) -> list[str]:
    """Make the toy ``big`` write different texts for different clips and detect French in some of ``audio``'s
    clips and German in the others (a random toy detects one language whatever it hears): the language tokens'
    rows of the output projection (untied from the input embeddings) set so that the decoder's state after the
    start token, which differs from clip to clip, scores French above German in half the clips and English
    lowest. Returns the codes ``big`` now detects."""
    import torch
    from transformers import WhisperFeatureExtractor

    from seq2spec.whisper.languages import detected_languages

    features = batch_features(audio, WhisperFeatureExtractor(feature_size=80), False)[0]["input_features"]
    start = torch.full((len(audio), 1), big.generation_config.decoder_start_token_id)
    with torch.no_grad():
        if scale:
            big.model.encoder.conv1.weight.mul_(3.0)  # texts that differ from clip to clip
        states = big.model(features[:, :, :3000], decoder_input_ids=start).last_hidden_state[:, -1]
        head = big.get_output_embeddings()
        if head.weight is big.model.decoder.embed_tokens.weight:  # the prompt's embeddings stay as they were
            head.weight = torch.nn.Parameter(head.weight.detach().clone())
        ids, weights = big.generation_config.lang_to_id, head.weight
        german, mean = weights[ids["<|de|>"]], states.mean(0)
        sign = torch.tensor([1.0 if i % 2 else -1.0 for i in range(len(audio))], dtype=torch.float64)
        weights[ids["<|fr|>"]] = german + (torch.linalg.pinv(states.double()) @ (4 * sign)).float()
        weights[ids["<|en|>"]] = german - 40 * mean / mean.norm() ** 2
    return detected_languages(big, features)


def test_clips_whose_language_is_detected_are_proposed_for_by_its_draft(toy_whisper_dirs, monkeypatch):
    """No language given: Whisper's generate detects each clip's language, the French rows of a batch are proposed
    for by the French draft and the German ones by the default draft in the same rounds (one batch, one big forward
    per round), and every transcript is the one ``big.generate`` gives detecting languages itself."""
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from seq2spec.whisper import languages

    big_dir, draft_dir = toy_whisper_dirs
    big = WhisperForConditionalGeneration.from_pretrained(big_dir).eval()
    audio = clips()
    detected = detecting_two_languages(big, audio)
    processor = WhisperProcessor.from_pretrained(big_dir)
    speculator = Seq2SeqSpeculator(big, str(draft_dir), processor, language_drafts={"fr": str(draft_dir)})
    assert set(detected) == {"fr", "de"}  # one batch of two languages
    french = speculator.for_language("fr")
    default_calls, french_calls = counted(speculator.draft), counted(french.draft)
    expected = greedy_texts(speculator, audio, None)
    assert len(set(expected)) > 1 and max(map(len, expected)) > 5  # texts that differ from clip to clip
    detections: list[int] = []
    original = languages.detected_languages
    monkeypatch.setattr(languages, "detected_languages", lambda *a: detections.append(1) or original(*a))
    assert speculator.transcribe(audio, sampling_rate=16_000) == expected
    assert french_calls and default_calls
    assert max(french_calls) == detected.count("fr") and max(default_calls) == detected.count("de")
    assert speculator.last_stats.big_encoder_calls == 1 and not detections  # one batch; generate detected
    assert speculator.for_language(["fr", "French"]) is french and speculator.for_language(["fr", "de"]) is speculator

    assert (
        speculator.detect_language(audio, 16_000) == detected and speculator.detect_language(audio[1], 16_000) == "fr"
    )
    with pytest.raises(ValueError, match="multilingual Whisper"):
        Seq2SeqSpeculator(build_toy_model("t5"), None).detect_language(audio, 16_000)
    french_calls.clear(), default_calls.clear()
    only_german = [clip for clip, code in zip(audio, detected, strict=True) if code == "de"]
    assert speculator.transcribe(only_german, sampling_rate=16_000) == greedy_texts(speculator, only_german, None)
    assert default_calls and not french_calls
    french_calls.clear(), default_calls.clear()
    given = ["fr" if index % 2 else "de" for index in range(len(audio))]  # a language per clip, given
    assert speculator.transcribe(audio, sampling_rate=16_000, language=given) == greedy_texts(speculator, audio, given)
    assert french_calls and default_calls


def test_long_files_whose_language_is_detected_are_decoded_by_its_draft(toy_whisper_dirs, monkeypatch, tmp_path):
    """Long files of two detected languages in one batch, their features in a file: decoded as one batch, each
    language's rows proposed for by its draft, the frames each row has passed handed back, every transcript (with
    timestamps) ``big.generate``'s."""
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from seq2spec.whisper import feature_file

    big_dir, draft_dir = toy_whisper_dirs
    big = WhisperForConditionalGeneration.from_pretrained(big_dir).eval()
    audio = [tone(36.0 + 3 * i, 16_000, 1, i).astype("float32") for i in range(4)]
    assert set(detecting_two_languages(big, audio)) == {"fr", "de"}
    speculator = Seq2SeqSpeculator(
        big, str(draft_dir), WhisperProcessor.from_pretrained(big_dir), language_drafts={"fr": str(draft_dir)}
    )
    french_calls = counted(speculator.for_language("fr").draft)
    expected = greedy_texts(speculator, audio, None, return_timestamps=True)
    paths = [tmp_path / f"{index}.wav" for index in range(len(audio))]
    for path, samples in zip(paths, audio, strict=True):
        soundfile.write(path, samples, 16_000, subtype="FLOAT")
    assert len({result["text"] for result in expected}) > 1
    released: list[list[int]] = []
    original = feature_file.FeatureFile.release_before

    def release(self, seeks):
        released.append(len(seeks))
        original(self, seeks)

    monkeypatch.setattr(feature_file, "FILE_BYTES", 0)
    monkeypatch.setattr(feature_file.FeatureFile, "release_before", release)
    assert speculator.transcribe(paths, return_timestamps=True) == expected
    assert french_calls and set(released) == {4}  # one batch of the four files
