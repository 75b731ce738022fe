"""The batched long form: speech found by Silero VAD, cut at pauses into pieces of at most 30 s, the pieces decoded
as short clips and put back together in the file's time."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.main import main
from seq2spec.whisper.audio import SAMPLING_RATE, load_audio
from seq2spec.whisper.speech import PIECE_SAMPLES, cut_pieces, speech_spans

pytest.importorskip("silero_vad")
SAMPLES = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples"


def speech(index: int) -> np.ndarray:
    return load_audio(sorted(SAMPLES.glob("clip*.wav"))[index])


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SAMPLING_RATE), dtype=np.float32)


def composed(parts: list[np.ndarray | float]) -> tuple[np.ndarray, list[int]]:
    """Clips and silences (seconds) one after another, and where each clip starts."""
    pieces, starts, at = [], [], 0
    for part in parts:
        samples = silence(part) if isinstance(part, float) else part
        if not isinstance(part, float):
            starts.append(at)
        pieces.append(samples)
        at += len(samples)
    return np.concatenate(pieces), starts


@pytest.fixture(scope="module")
def toy_speculator(toy_whisper_dirs) -> Seq2SeqSpeculator:
    return Seq2SeqSpeculator(str(toy_whisper_dirs[0]), str(toy_whisper_dirs[1]))


def test_pieces_hold_whole_stretches_of_speech_within_a_window():
    rng = random.Random(3)
    for _ in range(200):
        spans, at = [], rng.randint(0, 50_000)
        for _ in range(rng.randint(0, 30)):
            length = rng.randint(4_000, PIECE_SAMPLES - 1_000)
            spans.append((at, at + length))
            at += length + rng.randint(1_600, 200_000)
        pieces = cut_pieces(spans)
        assert all(end - start <= PIECE_SAMPLES for start, end in pieces)
        assert all(a[1] < b[0] for a, b in zip(pieces, pieces[1:], strict=False))  # in order, never overlapping
        for start, end in spans:  # every stretch of speech lies inside exactly one piece
            assert sum(1 for p_start, p_end in pieces if p_start <= start and end <= p_end) == 1
        assert {start for start, _ in pieces} <= {start for start, _ in spans}  # cut in pauses only
        assert {end for _, end in pieces} <= {end for _, end in spans}


def speech_bounds(clip: np.ndarray) -> tuple[int, int]:
    """Where a synthetic clip's speech starts and ends: its first and last sample above 1% of its peak (the voices
    write digital silence around it)."""
    loud = np.flatnonzero(np.abs(clip) > 0.01 * np.abs(clip).max())
    return int(loud[0]), int(loud[-1]) + 1


def test_speech_is_found_in_the_file_s_time():
    clips = [speech(0), speech(5), speech(2)]
    audio, starts = composed([3.0, clips[0], 6.5, clips[1], 2.0, clips[2], 4.0])
    found = speech_spans(audio)
    tolerance = 0.1 * SAMPLING_RATE
    for clip, start in zip(clips, starts, strict=True):
        first, last = (start + bound for bound in speech_bounds(clip))
        inside = [(a, b) for a, b in found if start - tolerance <= a < start + len(clip)]
        # the detector's padding (30 ms) and frames (32 ms) put its end up to about 0.11 s after the last sound
        assert abs(inside[0][0] - first) <= tolerance and 0 <= inside[-1][1] - last <= 1.5 * tolerance
    regions = [(start - tolerance, start + len(clip) + tolerance) for clip, start in zip(clips, starts, strict=True)]
    assert all(any(low <= a and b <= high for low, high in regions) for a, b in found)  # none in the silences


def test_silence_and_noise_give_no_words(toy_speculator):
    noise = np.clip(0.3 * np.random.default_rng(0).standard_normal(30 * SAMPLING_RATE), -1, 1).astype(np.float32)
    arguments = dict(sampling_rate=SAMPLING_RATE, language="en", long_form="batched")
    assert toy_speculator.transcribe([silence(60.0), noise], **arguments) == ["", ""]
    timed = toy_speculator.transcribe([silence(60.0), noise], return_timestamps=True, word_timestamps=True, **arguments)
    assert timed == [{"text": "", "segments": [], "words": []}] * 2
    sequential = toy_speculator.transcribe(noise, sampling_rate=SAMPLING_RATE, language="en")
    assert sequential  # the model writes words into noise when it reads it


def test_the_detector_leaves_torch_s_threads_as_they_were():
    """Importing Silero sets torch to one thread, in a fresh process: the decoding after it must keep its own."""
    script = (
        "import numpy, torch; torch.set_num_threads(2); from seq2spec.whisper.speech import speech_spans; "
        "speech_spans(numpy.zeros(16000, numpy.float32)); print(torch.get_num_threads())"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(SAMPLES.parents[2])})  # fmt: skip
    assert done.returncode == 0 and done.stdout.split()[-1] == "2", done.stderr[-2000:]


def test_each_piece_is_the_model_s_own_output_for_it(toy_speculator):
    files = [
        composed([1.0, speech(1), 1.5, speech(3), 0.8, speech(4), 20.0, speech(6), 2.0])[0],
        composed([speech(7), 3.0])[0],
        silence(5.0),
    ]
    arguments = dict(sampling_rate=SAMPLING_RATE, language="en")
    processor = toy_speculator.processor
    batched = toy_speculator.transcribe(files, long_form="batched", batch_size=3, return_timestamps=True, **arguments)
    for audio, result in zip(files, batched, strict=True):
        pieces = cut_pieces(speech_spans(audio))
        alone = [toy_speculator.transcribe(audio[a:b], return_timestamps=True, **arguments) for a, b in pieces]
        assert result["text"] == " ".join(text for text in (r["text"] for r in alone) if text)
        for (a, b), piece in zip(pieces, alone, strict=True):  # the big model's own greedy generate for the piece
            features = processor.feature_extractor(audio[a:b], sampling_rate=SAMPLING_RATE, return_tensors="pt")
            ids = toy_speculator.big.generate(
                features.input_features, language="en", task="transcribe", return_timestamps=True
            )
            assert piece["text"] == processor.batch_decode(ids, skip_special_tokens=True)[0].strip()
        expected = [
            {**segment, "start": round(segment["start"] + a / SAMPLING_RATE, 2),
             "end": round(segment["end"] + a / SAMPLING_RATE, 2)}
            for (a, _), r in zip(pieces, alone, strict=True) for segment in r["segments"]
        ]  # fmt: skip
        assert result["segments"] == expected
    assert len(cut_pieces(speech_spans(files[0]))) >= 2 and batched[0]["text"] and batched[2]["text"] == ""
    plain = toy_speculator.transcribe(files[0], long_form="batched", batch_size=2, **arguments)  # no timestamp tokens
    texts = []
    for a, b in cut_pieces(speech_spans(files[0])):
        features = processor.feature_extractor(files[0][a:b], sampling_rate=SAMPLING_RATE, return_tensors="pt")
        ids = toy_speculator.big.generate(features.input_features, language="en", task="transcribe")
        texts.append(processor.batch_decode(ids, skip_special_tokens=True)[0].strip())
    assert plain == " ".join(text for text in texts if text)


def _base_installed() -> bool:
    from test_default_whisper import _base_installed as installed

    return installed()


@pytest.mark.skipif(not _base_installed(), reason='the embedded base is not installed: "seq2spec[whisper]"')
def test_times_are_in_the_file_s_time_on_speech_with_known_times():
    from seq2spec.default_models import load_whisper_base_pair

    speculator = Seq2SeqSpeculator(*load_whisper_base_pair())
    clips = [speech(0), speech(6)]
    audio, starts = composed([4.0, clips[0], 33.0, clips[1], 3.0])  # two pieces: the pause is longer than a window
    result = speculator.transcribe(
        audio, sampling_rate=SAMPLING_RATE, language="en", long_form="batched", return_timestamps=True,
        word_timestamps=True,
    )  # fmt: skip
    assert len(cut_pieces(speech_spans(audio))) == 2
    placed = 0
    for clip, start in zip(clips, starts, strict=True):
        begin, end = ((start + bound) / SAMPLING_RATE for bound in speech_bounds(clip))
        segments = [s for s in result["segments"] if begin - 1 <= s["start"] <= end]
        assert abs(segments[0]["start"] - begin) <= 0.1 and abs(segments[-1]["end"] - end) <= 0.1, segments
        words = [w for w in result["words"] if begin - 1 <= w["start"] <= end]
        assert words and all(begin - 0.25 <= w["start"] and w["end"] <= end + 0.25 for w in words)  # aligned words
        placed += len(words)
    assert placed == len(result["words"])  # none in the silences


def test_the_command_s_batched_long_form_resumes(toy_whisper_dirs, tmp_path, capsys):
    folder = tmp_path / "audio"
    folder.mkdir()
    soundfile.write(folder / "talk.wav", composed([2.0, speech(1), 30.0, speech(2), 1.0])[0], SAMPLING_RATE)
    soundfile.write(folder / "quiet.wav", silence(40.0), SAMPLING_RATE)
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(folder), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    argv += ["--long-form", "batched", "--timestamps"]
    assert main(argv) == 0
    records = {Path(r["file"]).name: r for r in map(json.loads, out.read_text().splitlines())}
    speculator = Seq2SeqSpeculator(str(toy_whisper_dirs[0]))
    for name, record in records.items():
        expected = speculator.transcribe(
            load_audio(folder / name), sampling_rate=SAMPLING_RATE, language="en", long_form="batched",
            return_timestamps=True,
        )  # fmt: skip
        assert {key: record[key] for key in ("text", "segments")} == expected
    assert records["quiet.wav"]["text"] == "" and records["talk.wav"]["text"]
    capsys.readouterr()
    assert main(argv) == 0 and "0 to transcribe" in capsys.readouterr().err
