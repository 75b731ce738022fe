"""seq2spec transcribe over a folder: good clips at several rates and channel counts, bad files as records, resume."""

from __future__ import annotations

import io
import json
import os
import warnings

import numpy as np
import pytest
import soundfile
import torch
from synthetic_audio import tone

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.main import main
from seq2spec.commands.transcribe import completed_files, render
from seq2spec.whisper.audio import load_audio
from seq2spec.whisper.progress import AudioProgress

GOOD = {"a_8k_mono.wav", "b_16k_stereo.flac", "c_44k_stereo.wav", "d_16k_mono.ogg"}
BAD = {"empty.wav", "notes.wav", "truncated.wav"}


def read_records(path):
    return {json.loads(line)["file"].split("/")[-1]: json.loads(line) for line in path.read_text().splitlines()}


def test_folder_is_transcribed_bad_files_reported_and_rerun_skips(toy_whisper_dirs, audio_folder, tmp_path, capsys):
    big_dir, draft_dir = toy_whisper_dirs
    out = tmp_path / "out" / "results.jsonl"
    args = [
        "transcribe",
        str(audio_folder),
        "--out",
        str(out),
        "--model",
        str(big_dir),
        "--assistant",
        str(draft_dir),
        "--language",
        "en",
        "--batch-size",
        "3",
    ]
    assert main(args) == 1  # some files failed
    records = read_records(out)
    assert set(records) == GOOD | BAD
    for name in BAD:
        assert name in records[name]["error"]
    assert "no audio samples" in records["empty.wav"]["error"]

    # Same text as the library call on the same decoded audio, file for file.
    speculator = Seq2SeqSpeculator(str(big_dir), str(draft_dir))
    for name in GOOD:
        path = next(audio_folder.rglob(name))
        assert records[name]["text"] == speculator.transcribe(load_audio(path), sampling_rate=16000, language="en")
        assert records[name]["duration"] > 0.9
    assert len({records[name]["text"] for name in GOOD}) >= 2  # different audio, different text

    capsys.readouterr()
    assert main(args) == 1  # the files that failed are tried again, and fail again
    assert "4 already done, 3 to transcribe (3 that failed before tried again)" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == len(GOOD | BAD)  # one record per file
    assert main([*args, "--skip-failed"]) == 0  # nothing left to do when error records count as done
    assert "0 to transcribe" in capsys.readouterr().err
    assert read_records(out) == records


def test_a_killed_run_resumes_without_corruption(toy_whisper_dirs, audio_folder, tmp_path):
    big_dir, _ = toy_whisper_dirs
    out = tmp_path / "results.jsonl"
    args = [
        "transcribe",
        str(audio_folder / "a_8k_mono.wav"),
        str(audio_folder / "d_16k_mono.ogg"),
        "--out",
        str(out),
        "--model",
        str(big_dir),
        "--language",
        "en",
    ]
    assert main(args) == 0
    lines = out.read_text().splitlines()
    out.write_text(lines[0] + "\n" + lines[1][:7])  # the second record was cut mid-write
    assert completed_files(out) == {os.path.realpath(json.loads(lines[0])["file"])}
    assert main(args) == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == [json.loads(line) for line in lines]


def test_a_rerun_knows_files_by_any_name(toy_whisper_dirs, audio_folder, tmp_path, monkeypatch, capsys):
    """Resume matches files, not spellings: a file transcribed under a relative name is done when named absolutely
    or through a symbolic link, and a file named twice in one run is transcribed once."""
    big_dir, _ = toy_whisper_dirs
    clip = next(audio_folder.rglob("a_8k_mono.wav"))
    link = tmp_path / "linked.wav"
    link.symlink_to(clip)
    out = tmp_path / "results.jsonl"
    monkeypatch.chdir(clip.parent)
    common = ["--out", str(out), "--model", str(big_dir), "--language", "en"]
    assert main(["transcribe", clip.name, f"./{clip.name}", str(clip), *common]) == 0
    assert "1 audio files, 0 already done, 1 to transcribe" in capsys.readouterr().err
    first = out.read_text()
    assert [json.loads(line)["file"] for line in first.splitlines()] == [clip.name]
    for name in (str(clip), str(link), f"../{clip.parent.name}/{clip.name}"):
        assert main(["transcribe", name, *common]) == 0
        assert "1 already done, 0 to transcribe" in capsys.readouterr().err
    assert out.read_text() == first


def test_formats_and_timestamps(toy_whisper_dirs, audio_folder, tmp_path):
    big_dir, _ = toy_whisper_dirs
    out = tmp_path / "results.jsonl"
    args = [
        "transcribe",
        str(audio_folder / "d_16k_mono.ogg"),
        "--out",
        str(out),
        "--model",
        str(big_dir),
        "--language",
        "en",
        "--timestamps",
        "--format",
        "srt",
    ]
    assert main(args) == 0
    record = json.loads(out.read_text())
    assert "segments" in record
    srt = (tmp_path / "results_srt" / "d_16k_mono.ogg.srt").read_text()
    assert srt.startswith("1\n00:00:")
    vtt = render({"text": "hi", "duration": 1.5}, "vtt")
    assert vtt == "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nhi\n"
    silent = {"text": "", "duration": 60.0, "segments": []}  # nothing said: no cue, not an empty one
    assert render(silent, "srt") == "" and render(silent, "vtt") == "WEBVTT\n\n" and render(silent, "txt") == "\n"
    assert render({"text": "", "duration": 3.0}, "srt") == ""


def test_missing_input_is_an_error(tmp_path, capsys):
    assert main(["transcribe", str(tmp_path / "nothing"), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_transcribe_api_checks(toy_whisper_dirs):
    speculator = Seq2SeqSpeculator(str(toy_whisper_dirs[0]))
    with pytest.raises(ValueError, match="sampling_rate is required"):
        speculator.transcribe(np.zeros(1600, dtype=np.float32))
    with pytest.raises(ValueError, match="empty"):
        speculator.transcribe(np.zeros(0, dtype=np.float32), sampling_rate=16000)
    text = speculator.transcribe(torch.zeros(16000), sampling_rate=16000, language="en")
    assert isinstance(text, str)


def test_killed_mid_run_then_resumed(toy_whisper_dirs, tmp_path):
    """SIGKILL while transcribing: the output stays valid JSONL and a rerun finishes each file exactly once."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    folder = tmp_path / "many"
    folder.mkdir()
    for index in range(30):
        soundfile.write(folder / f"clip{index:02d}.wav", tone(2.0 + index % 3, 16000, 1, index), 16000)
    out = tmp_path / "results.jsonl"
    args = [
        "transcribe",
        str(folder),
        "--out",
        str(out),
        "--model",
        str(toy_whisper_dirs[0]),
        "--language",
        "en",
        "--batch-size",
        "1",
    ]
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    process = subprocess.Popen(
        [sys.executable, "-m", "seq2spec", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 120
    while time.time() < deadline and (not out.exists() or len(out.read_bytes().splitlines()) < 3):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    written = completed_files(out)
    assert 3 <= len(written) < 30  # killed part-way
    assert main(args) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["file"] for r in records) == sorted(str(p) for p in folder.glob("*.wav"))


def test_fallback_previous_text_and_prompt_flags(toy_whisper_dirs, audio_folder, tmp_path, capsys):
    """The decoding flags reach Whisper's generate: the command's text is the library call's with the same
    WhisperDecoding (fallback passes sample with the command's seed), and the prompt changes what is decoded."""
    from seq2spec import WhisperDecoding

    big_dir, draft_dir = toy_whisper_dirs
    names = ("a_8k_mono.wav", "d_16k_mono.ogg")
    paths = [next(audio_folder.rglob(name)) for name in names]
    out = tmp_path / "results.jsonl"
    flags = ["--temperature-fallback", "--condition-on-previous-text", "--initial-prompt", "tea and cake"]
    args = ["transcribe", *map(str, paths), "--out", str(out), "--model", str(big_dir), "--language", "en"]
    assert main([*args, "--assistant", str(draft_dir), *flags, "--seed", "3"]) == 0
    records = read_records(out)

    speculator = Seq2SeqSpeculator(str(big_dir), str(draft_dir))
    clips = [load_audio(path) for path in paths]
    decoding = WhisperDecoding(True, True, "tea and cake", seed=3)
    expected = speculator.transcribe(clips, sampling_rate=16000, language="en", decoding=decoding)
    assert [records[name]["text"] for name in names] == expected
    plain = speculator.transcribe(clips, sampling_rate=16000, language="en")
    assert expected != plain

    capsys.readouterr()
    assert main([*args[:3], "--out", str(tmp_path / "other.jsonl"), *args[5:], "--initial-prompt", " "]) == 2
    assert "initial_prompt must be non-empty" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["transcribe", "--help"])
    help_text = capsys.readouterr().out
    assert "greedy decoding" in help_text and "--temperature-fallback" in help_text


def test_word_timestamps(toy_whisper_dirs, audio_folder, tmp_path):
    """--word-timestamps: words with times in the JSONL, as the library gives them, and one SRT cue per word."""
    big_dir, draft_dir = toy_whisper_dirs
    path = next(audio_folder.rglob("c_44k_stereo.wav"))
    out = tmp_path / "results.jsonl"
    args = ["transcribe", str(path), "--out", str(out), "--model", str(big_dir), "--assistant", str(draft_dir)]
    assert main([*args, "--language", "en", "--word-timestamps", "--format", "srt"]) == 0
    record = json.loads(out.read_text())
    words = record["words"]  # the toy's byte tokens rarely hold spaces: words are checked on base's real ones
    assert words and all(0 <= w["start"] <= w["end"] <= record["duration"] + 0.02 for w in words)
    speculator = Seq2SeqSpeculator(str(big_dir), str(draft_dir))
    library = speculator.transcribe(load_audio(path), sampling_rate=16000, language="en", word_timestamps=True)
    assert library["words"] == words
    srt = (tmp_path / "results_srt" / "c_44k_stereo.wav.srt").read_text()
    assert srt.count(" --> ") == len(words)


def test_int8_dtype(toy_whisper_dirs, audio_folder, tmp_path):
    """--dtype int8: the texts of the int8 model's own greedy generate, through the draft."""
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from seq2spec.int8 import quantize_int8

    big_dir, draft_dir = toy_whisper_dirs
    names = ("a_8k_mono.wav", "d_16k_mono.ogg")
    paths = [next(audio_folder.rglob(name)) for name in names]
    out = tmp_path / "results.jsonl"
    args = ["transcribe", *map(str, paths), "--out", str(out), "--model", str(big_dir), "--language", "en"]
    assert main([*args, "--assistant", str(draft_dir), "--dtype", "int8"]) == 0
    records = read_records(out)

    big = quantize_int8(WhisperForConditionalGeneration.from_pretrained(big_dir).eval())
    processor = WhisperProcessor.from_pretrained(big_dir)
    for name, path in zip(names, paths, strict=True):
        features = processor.feature_extractor(load_audio(path), sampling_rate=16000, return_tensors="pt")
        ids = big.generate(features.input_features, language="en", task="transcribe")
        assert records[name]["text"] == processor.batch_decode(ids, skip_special_tokens=True)[0].strip()


def test_audio_progress_never_passes_its_total():
    """Windows add up to more than the rounded total (3 x 2.46 s against 7.3): the bar stops at its total, moves to
    each finished batch's seconds, and never goes back."""
    from tqdm import tqdm

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # tqdm warns when its count passes its total
        bar = tqdm(total=round(3 * 2.435, 1), disable=False, file=io.StringIO())
        done = AudioProgress(bar)
        for _ in range(3):
            done.add(2.46)
        assert bar.n == bar.total == 7.3
        done.move_to(7.305)
        assert bar.n == 7.3
        bar.close()
    bar = tqdm(total=10.0, file=io.StringIO())
    done = AudioProgress(bar)
    done.add(3.46)
    done.move_to(3.0)  # the batch's files: fewer seconds than its windows reported
    assert bar.n == 3.5
    done.add(1.0)
    assert bar.n == 4.0
