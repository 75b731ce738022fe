"""recipes/multilingual_speech.py and the distillation recipe's labels in the speech's own language and task."""

from __future__ import annotations

import gzip
import json

import distill_whisper_draft as distill
import multilingual_speech as speech
import numpy as np
import pytest
import soundfile
import torch

FRENCH = speech.LANGUAGES["fr"]


@pytest.mark.parametrize(
    ("sentence", "kept"),
    [
        ("Le fichier est ouvert dans le répertoire courant.", True),
        ("  - Le fichier est ouvert dans le répertoire courant.  ", True),
        ("The file is opened in the current directory.", False),  # English left in a French page
        ("Le fichier <chemin> est ouvert dans le répertoire.", False),  # markup
        ("Le fichier est ouvert avec l'option -f dans le répertoire.", False),  # a command line
        ("Le fichier est ouvert dans les 3 répertoires.", False),  # digits, read differently by each voice
        ("le fichier est ouvert dans le répertoire.", False),  # not a sentence's start
        ("Le fichier.", False),  # too short
    ],
)
def test_only_plain_sentences_of_the_language_are_kept(sentence, kept):
    assert (speech.clean(sentence, FRENCH) is not None) == kept


def test_scripts_are_told_apart():
    assert speech.clean("Файл открыт в текущем каталоге сейчас.", speech.LANGUAGES["ru"]) is not None
    assert speech.clean("Файл открыт в текущем каталоге сейчас.", speech.LANGUAGES["hi"]) is None
    assert speech.clean("ファイルは現在のディレクトリで開かれています。", speech.LANGUAGES["ja"]) is not None
    assert speech.clean("短い。", speech.LANGUAGES["zh"]) is None  # under 8 characters
    assert speech.script_share("abc где", "CYRILLIC") == pytest.approx(0.5)


def test_a_manual_page_gives_its_running_text(tmp_path):
    page = tmp_path / "ls.1.gz"
    source = ".TH LS 1\n.SH NOM\nls \\- lister\n.SH DESCRIPTION\nAfficher les \\fBfichiers\\fR du répertoire.\n"
    source += '.B "Le mode"\nest lu ici.\n'
    page.write_bytes(gzip.compress(source.encode("utf-8")))
    text = speech.groff_text(page)
    assert "Afficher les fichiers du répertoire." in text
    assert "Le mode est lu ici." in " ".join(text.split())
    assert ".TH" not in text and "\\f" not in text


def test_the_vocabulary_keeps_the_english_draft_s_and_adds_each_language_in_turn(tmp_path, monkeypatch):
    end_of_text = 100

    class Tokenizer:
        def convert_tokens_to_ids(self, token):
            assert token == "<|endoftext|>"
            return end_of_text

        def __call__(self, texts, add_special_tokens):
            return type("Encoded", (), {"input_ids": [[int(w) for w in t.split()] for t in texts]})()

    folder = tmp_path / "encoded" / "train"
    folder.mkdir(parents=True)
    rows = [[1, 50, 50, 50, 51, 100], [1, 60, 60, 61, 100, 100], [1, 70, 70, 70, 100, 100]]
    torch.save(
        {
            "ids": torch.tensor(rows),
            "prompt_lengths": torch.tensor([1, 1, 1]),
            "lengths": torch.tensor([6, 5, 5]),
            "languages": ["fr:transcribe", "de:transcribe", "de:translate"],  # a translation's text is English
        },
        folder / "000000.pt",
    )
    monkeypatch.setattr(speech, "split_sentences", lambda code, percent: ({"fr": ["52 52 53"], "de": ["62"]}[code], []))
    keep = [10, 11, 100, 101]
    chosen = speech.choose_output_tokens(tmp_path, keep, 9, Tokenizer(), 8)
    # de: 60 61 (labels) then 62 (sentences); fr: 50 51 then 52 53; taken in turn (de, fr, de, ...) until 9 tokens
    assert chosen == sorted([10, 11, 100, 101, 60, 50, 61, 51, 62])
    assert 70 not in speech.choose_output_tokens(tmp_path, keep, 20, Tokenizer(), 8)  # the translation's


def test_labels_are_base_s_greedy_output_in_each_clip_s_language_and_task(toy_whisper_dirs, tmp_path):
    from synthetic_audio import tone
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    big_dir, _ = toy_whisper_dirs
    big = WhisperForConditionalGeneration.from_pretrained(big_dir).eval()
    processor = WhisperProcessor.from_pretrained(big_dir)
    kinds = [("fr", "transcribe"), ("de", "translate"), ("en", "transcribe"), ("fr", "transcribe")]
    records = []
    for index, (language, task) in enumerate(kinds):
        path = tmp_path / f"{index}.wav"
        soundfile.write(path, tone(1.0 + index, 16_000, 1, index).astype(np.float32), 16_000)
        records.append({"path": str(path), "language": language, "task": task})
    chunk = distill.encode_chunk(big, processor, records, [False, False, True, False], top_k=4, max_new_tokens=12)
    assert chunk["languages"] == [f"{language}:{task}" for language, task in kinds]
    tokenizer = processor.tokenizer
    for row, ((language, task), timestamps) in enumerate(zip(kinds, [False, False, True, False], strict=True)):
        prompt = distill.prompt_ids(tokenizer, timestamps, language, task)
        ids = chunk["ids"][row, : int(chunk["lengths"][row])].tolist()
        assert ids[: len(prompt)] == prompt and int(chunk["prompt_lengths"][row]) == len(prompt)
        assert tokenizer.convert_ids_to_tokens(prompt[1:3]) == [f"<|{language}|>", f"<|{task}|>"]
        features = processor.feature_extractor(
            [distill.read_clip(records[row]["path"])], sampling_rate=16_000, return_tensors="pt"
        ).input_features
        alone = big.generate(features, language=language, task=task, return_timestamps=timestamps,
                             max_new_tokens=12, force_unique_generate_call=timestamps)[0].tolist()  # fmt: skip
        eos = big.generation_config.eos_token_id
        alone = [t for t in alone[len(prompt) if alone[: len(prompt)] == prompt else 0 :] if t != eos]
        assert ids[len(prompt) :] == alone + ([eos] if len(alone) < 12 else [])


def test_reference_labels_are_each_clip_s_text_with_base_s_next_tokens_along_it(toy_whisper_dirs, tmp_path):
    from synthetic_audio import tone
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    big_dir, _ = toy_whisper_dirs
    big = WhisperForConditionalGeneration.from_pretrained(big_dir).eval()
    processor = WhisperProcessor.from_pretrained(big_dir)
    tokenizer = processor.tokenizer
    kinds = [("fr", "transcribe", False), ("de", "translate", False), ("fr", "transcribe", True)]
    records = []
    for index, (language, task, _) in enumerate(kinds):
        path = tmp_path / f"{index}.wav"
        soundfile.write(path, tone(1.0 + index, 16_000, 1, index).astype(np.float32), 16_000)
        records.append({"path": str(path), "language": language, "task": task, "text": "Le chat dort ici."})
    flags = [timestamps for _, _, timestamps in kinds]
    chunk = distill.encode_chunk(big, processor, records, flags, top_k=4, max_new_tokens=40, labels="reference")
    greedy = distill.encode_chunk(big, processor, records, flags, top_k=4, max_new_tokens=40)
    prompt = distill.prompt_ids(tokenizer, False, "fr", "transcribe")
    ids = chunk["ids"][0, : int(chunk["lengths"][0])].tolist()
    text = tokenizer(" Le chat dort ici.", add_special_tokens=False).input_ids
    assert ids == prompt + text + [tokenizer.eos_token_id]
    assert ids != greedy["ids"][0, : int(greedy["lengths"][0])].tolist()  # not what base decodes
    logits = big(encoder_outputs=(chunk["encoded"][:1].float(),), decoder_input_ids=torch.tensor([ids])).logits
    assert chunk["top_ids"][0, : len(ids), 0].tolist() == logits[0].argmax(-1).tolist()  # base's next tokens
    for row in (1, 2):  # a translation and a clip with timestamps have no text to follow: base's greedy labels
        length = int(greedy["lengths"][row])
        assert chunk["ids"][row, :length].tolist() == greedy["ids"][row, :length].tolist()
    japanese = {"text": "ふぁいるをひらきます", "written": "ファイルを開きます。", "language": "ja"}
    assert distill.reference_label(tokenizer, japanese, 200) == [
        *tokenizer("ファイルを開きます。", add_special_tokens=False).input_ids,  # no space before Japanese
        tokenizer.eos_token_id,
    ]
    assert distill.reference_label(tokenizer, {"text": "Le chat dort ici."}, 2) == text[:2]  # cut: no EOS


def test_clips_read_from_kana_or_pinyin_keep_the_written_text(tmp_path, monkeypatch):
    monkeypatch.setattr(speech, "split_sentences", lambda code, percent: (["文件已打开。"], ["文件已关闭。"]))
    monkeypatch.setattr(distill, "split_sentences", lambda percent: (["The cat sleeps."], ["The dog sleeps."]))
    spoken = []
    monkeypatch.setattr(distill, "speak", lambda text, voice, stretch, seed=0: spoken.append(text) or np.zeros(160))
    args = type("Args", (), {"held_out_percent": 8, "languages": ["zh"], "seed": 0, "work_dir": tmp_path,
                             "short_clips": 1, "long_clips": 1, "heldout_clips": 1, "heldout_long_clips": 0,
                             "translate_share": 0.0})()  # fmt: skip
    records = {(r["split"], r["language"]): r for r in speech.make_manifest(args)}
    short = records[("train", "zh")]
    assert short["written"].startswith("文件已打开。") and short["text"].startswith("wen2 jian4 yi3 da3 kai1.")
    assert records[("heldout", "zh")]["text"].startswith("wen2 jian4 yi3 guan1 bi4.")
    assert records[("train_long", "zh")]["text"].startswith("wen2 jian4")  # long clips are read too
    assert "written" not in records[("train", "en")]
    assert not any("文" in text for text in spoken)  # espeak-ng is never given hanzi


def test_a_manifest_lists_each_clip_s_language_and_task(tmp_path, monkeypatch):
    monkeypatch.setattr(speech, "split_sentences", lambda code, percent: (["Le chat dort ici."], ["Le chien dort."]))
    monkeypatch.setattr(distill, "split_sentences", lambda percent: (["The cat sleeps."], ["The dog sleeps."]))
    monkeypatch.setattr(distill, "speak", lambda text, voice, stretch, seed=0: np.zeros(1600, dtype=np.float32))
    args = type("Args", (), {"held_out_percent": 8, "languages": ["fr"], "seed": 0, "work_dir": tmp_path,
                             "short_clips": 3, "long_clips": 1, "heldout_clips": 2, "heldout_long_clips": 1,
                             "translate_share": 1.0})()  # fmt: skip
    records = speech.make_manifest(args)
    assert {(r["split"], r["language"]) for r in records} == {
        (split, code) for split in ("train", "train_long", "heldout", "heldout_long") for code in ("fr", "en")
    }
    translated = {(r["split"], r["language"]) for r in records if r["task"] == "translate"}
    assert translated == {("train", "fr")}  # short French training clips only: never English, never held out
    french = [r for r in records if r["language"] == "fr"]
    held_voices = {r["voice"].split(":")[1] for r in french if r["split"].startswith("heldout")}
    train_voices = {r["voice"].split(":")[1] for r in french if r["split"].startswith("train")}
    assert held_voices and train_voices and not held_voices & train_voices
    assert json.dumps(records)  # what the manifest file holds


def test_japanese_and_chinese_are_read_from_kana_and_pinyin():
    kana = speech.read_aloud("ファイルを開きます。", speech.LANGUAGES["ja"])
    assert kana.startswith("ふぁいるをひらきます")
    assert speech.script_share(kana, "HIRAGANA") == 1.0
    assert speech.read_aloud("文件已打开。", speech.LANGUAGES["zh"]) == "wen2 jian4 yi3 da3 kai1."
    assert speech.read_aloud("Le fichier.", FRENCH) == "Le fichier."


def test_kokoro_voices_are_named_by_their_language():
    import voices

    assert [voices.kokoro_language(v) for v in ("ff_siwis", "em_alex", "if_sara", "pf_dora", "zf_xiaobei")] == [
        "fr", "es", "it", "pt", "zh"
    ]  # fmt: skip
    assert voices.kokoro_language("af_nicole") == voices.kokoro_language("bm_lewis") == "en"


def test_relabel_gives_reference_labelled_chunks_base_s_greedy_labels(toy_whisper_dirs, tmp_path, monkeypatch):
    """--stage relabel: clips encoded with their text as labels get base's greedy labels, decoded from the stored
    encoder outputs in batches of one kind across chunks (timestamps drawn as the encode stage draws them), with
    base's next tokens along them; a chunk relabelled once is left alone by a rerun."""
    from argparse import Namespace

    from synthetic_audio import tone
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    big_dir, _ = toy_whisper_dirs
    big = WhisperForConditionalGeneration.from_pretrained(big_dir).eval()
    processor = WhisperProcessor.from_pretrained(big_dir)
    tokenizer = processor.tokenizer
    monkeypatch.setattr(distill, "load_base", lambda args: (big, processor))
    languages = ["fr", "de", "fr", "en", "fr"]
    records = []
    for index, language in enumerate(languages):
        path = tmp_path / f"{index}.wav"
        soundfile.write(path, tone(1.0 + index / 2, 16_000, 1, index).astype(np.float32), 16_000)
        records.append({"path": str(path), "language": language, "text": f"Le chat {index} dort ici."})
    folder = tmp_path / "work" / "encoded" / "train"
    folder.mkdir(parents=True)
    for start in (0, 3):  # two chunks: a batch of one kind takes rows of both
        chosen = records[start : start + 3]
        chunk = distill.encode_chunk(big, processor, chosen, [False] * len(chosen), 4, 10, labels="reference")
        torch.save(chunk, folder / f"{start:06d}.pt")
    args = Namespace(work_dir=tmp_path / "work", seed=0, timestamp_share=0.5, long_timestamp_share=0.7, top_k=4,
                     label_batch=2, max_new_tokens=10, short_max_new_tokens=10)  # fmt: skip
    distill.stage_relabel(args)
    flags = distill.timestamp_flags(args, "train", len(records))
    assert any(flags) and not all(flags)
    chunks = [torch.load(folder / name) for name in ("000000.pt", "000003.pt")]
    assert all(chunk["labels"] == "greedy" for chunk in chunks)
    rows = [(chunk, row) for chunk in chunks for row in range(len(chunk["ids"]))]
    for (chunk, row), language, flag in zip(rows, languages, flags, strict=True):
        ids = chunk["ids"][row, : int(chunk["lengths"][row])].tolist()
        state = chunk["encoded"][row : row + 1].float()
        assert [ids] == distill.greedy_labels(big, tokenizer, state, flag, language, "transcribe", 10)
        assert int(chunk["prompt_lengths"][row]) == len(distill.prompt_ids(tokenizer, flag, language))
        logits = big(encoder_outputs=(state,), decoder_input_ids=torch.tensor([ids])).logits
        assert chunk["top_ids"][row, : len(ids), 0].tolist() == logits[0].argmax(-1).tolist()
    assert any(chunk["texts"][0] != "Le chat 0 dort ici." for chunk in chunks[:1])
    stamp = (folder / "000000.pt").stat().st_mtime_ns
    distill.stage_relabel(args)
    assert (folder / "000000.pt").stat().st_mtime_ns == stamp  # nothing left to relabel
