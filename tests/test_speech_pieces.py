"""The batched long form: speech found by Silero VAD, joined at pauses into pieces of at most 30 s, the pieces
decoded as short clips and put back together in the file's time; files read stretch by stretch."""

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
from seq2spec.whisper import audio as audio_module
from seq2spec.whisper.audio import SAMPLING_RATE, AudioFile, load_audio
from seq2spec.whisper.speech import (
    LEAD_IN,
    LONGEST_JOINED_PAUSE,
    PIECE_SAMPLES,
    READ_ACROSS,
    Piece,
    clip_speech,
    pack_stretches,
    speech_pieces,
)
from seq2spec.whisper.voice_activity import (
    SPEECH_PAD_MS,
    SpeechScorer,
    Stretch,
    load_detector,
    speech_spans,
    with_margins,
)

pytest.importorskip("silero_vad")
SAMPLES = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples"


def speech(index: int) -> np.ndarray:
    return load_audio(sorted(SAMPLES.glob("clip*.wav"))[index])


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SAMPLING_RATE), dtype=np.float32)


def from_first_sound(samples: np.ndarray) -> np.ndarray:
    """``samples`` from their first sample above 0.01: no silence before the speech."""
    return samples[np.flatnonzero(np.abs(samples) > 0.01)[0] :]


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
        stretches, at = [], rng.randint(0, 50_000)
        for _ in range(rng.randint(0, 30)):
            length = rng.randint(4_000, PIECE_SAMPLES - 1_000)
            stretches.append(Stretch(at, at + length, at + 100, at + length - 100))
            at += length + rng.randint(0, 200_000)
        for longest_pause in (None, LONGEST_JOINED_PAUSE):
            groups = pack_stretches(stretches, longest_pause=longest_pause)
            assert all(sum(len(stretch) for stretch in group) <= PIECE_SAMPLES for group in groups)
            assert [stretch for group in groups for stretch in group] == stretches  # each whole, once, in order
            for group, after in zip(groups, groups[1:], strict=False):  # closed when full or at a long pause
                long_pause = longest_pause is not None and after[0].speech_start - group[-1].speech_end > longest_pause
                assert sum(len(stretch) for stretch in group) + len(after[0]) > PIECE_SAMPLES or long_pause
                pauses = [b.speech_start - a.speech_end for a, b in zip(group, group[1:], strict=False)]
                assert longest_pause is None or all(pause <= longest_pause for pause in pauses)
    long = 2 * PIECE_SAMPLES + 5
    assert pack_stretches([Stretch(0, long, 10, long - 10)]) == [
        (Stretch(0, PIECE_SAMPLES, 10, PIECE_SAMPLES),), (Stretch(PIECE_SAMPLES, 2 * PIECE_SAMPLES, PIECE_SAMPLES,
         2 * PIECE_SAMPLES - 5),), (Stretch(2 * PIECE_SAMPLES, long, 2 * PIECE_SAMPLES, 2 * PIECE_SAMPLES),)
    ]  # fmt: skip


def test_margins_never_overlap_and_pauses_are_shared():
    stretches = with_margins([(1_000, 5_000), (5_500, 9_000), (20_000, 30_000)], margin=3_200, total=31_000)
    assert stretches == [Stretch(0, 5_250, 1_000, 5_000), Stretch(5_250, 12_200, 5_500, 9_000),
                         Stretch(16_800, 31_000, 20_000, 30_000)]  # fmt: skip


def test_piece_times_map_back_to_the_clip_across_the_left_out_pauses():
    # 1-3 s and 10-11 s of the clip, speech heard at 1.2-2.9 s and 10-11 s: 3 s of piece
    piece = Piece(0, (Stretch(16_000, 48_000, 19_200, 46_400), Stretch(160_000, 176_000, 160_000, 176_000)))
    assert len(piece) == 48_000
    assert piece.clip_time(0.5) == 1.5 and piece.clip_time(1.5) == 2.5
    assert piece.clip_time(0.0) == 1.2 and piece.clip_time(1.95, is_end=True) == 2.9  # margins: to the speech
    assert piece.clip_time(2.0) == 10.0 and piece.clip_time(2.0, is_end=True) == 2.9  # where the stretches meet
    assert piece.clip_time(2.5) == 10.5 and piece.clip_time(3.0, is_end=True) == 11.0
    assert piece.clip_time(29.0) == 11.0 and piece.clip_time(-1.0) == 1.2  # Whisper's times past the piece
    assert piece.word_end(1.5, 2.5) == 2.9 and piece.word_end(2.2, 2.6) == 10.6  # a word ends in its stretch
    clip = np.arange(200_000, dtype=np.float32)
    assert np.array_equal(piece.samples(clip), np.concatenate([clip[16_000:48_000], clip[160_000:176_000]]))


def test_speech_from_a_recording_s_first_sample_is_decoded_after_silence():
    # speech heard from 0.1 s: the piece gets 0.1 s of silence first, so that 0.2 s come before its speech
    piece = Piece.of(0, (Stretch(0, 32_000, 1_600, 30_000),))
    assert piece.lead_in == LEAD_IN - 1_600 == 1_600 and len(piece) == 32_000
    clip = np.arange(1, 40_001, dtype=np.float32)
    assert np.array_equal(piece.samples(clip), np.concatenate([np.zeros(1_600, np.float32), clip[:32_000]]))
    assert piece.clip_time(0.05) == 0.1 and piece.clip_time(1.1) == 1.0  # piece times less the lead-in
    assert Piece.of(0, (Stretch(100, 32_000, 3_300, 30_000),)).lead_in == 0  # not from the first sample
    assert Piece.of(0, (Stretch(0, 32_000, 3_200, 30_000),)).lead_in == 0  # its margin is whole
    whole_window = (Stretch(0, PIECE_SAMPLES - 800, 0, PIECE_SAMPLES - 800),)
    assert Piece.of(0, whole_window).lead_in == 800 and Piece.of(0, whole_window, limit=None).lead_in == LEAD_IN


def test_the_fast_scorer_gives_silero_s_own_probabilities_block_by_block():
    audio = np.concatenate([speech(0), silence(1.3), speech(4)[: 3 * SAMPLING_RATE + 77]])
    detector = load_detector()
    detector.reset_states()
    one_by_one = []
    for start in range(0, len(audio), 512):
        frame = np.zeros(512, dtype=np.float32)
        frame[: len(audio[start : start + 512])] = audio[start : start + 512]
        one_by_one.append(float(detector(__import__("torch").from_numpy(frame), SAMPLING_RATE)))
    scorer = SpeechScorer(frames_at_once=37)
    assert scorer.batched
    rng = np.random.default_rng(1)
    cuts = np.sort(rng.choice(len(audio), size=9, replace=False))
    fed = [scorer.feed(block) for block in np.split(audio, cuts)] + [scorer.finish()]
    assert np.abs(np.concatenate(fed) - np.array(one_by_one)).max() < 1e-4
    assert max(one_by_one) > 0.9 and min(one_by_one) < 0.1  # speech and silence both present


def test_a_file_is_read_stretch_by_stretch_as_it_is_read_whole(tmp_path):
    audio = np.concatenate([speech(2), silence(0.7), speech(8), silence(11.0), speech(3)])
    for rate in (SAMPLING_RATE, 44_100):
        path = tmp_path / f"clip_{rate}.wav"
        import soxr

        stored = audio if rate == SAMPLING_RATE else soxr.resample(audio, SAMPLING_RATE, rate).astype(np.float32)
        soundfile.write(path, np.stack([stored, stored], axis=1), rate, subtype="FLOAT")
        whole, lazy = load_audio(path), AudioFile(path)
        assert abs(len(lazy) - len(whole)) <= 1
        streamed = np.concatenate(list(lazy.blocks(seconds=1.7)))
        assert abs(len(streamed) - len(whole)) <= 1
        n = min(len(streamed), len(whole))
        assert np.abs(streamed[:n] - whole[:n]).max() < (1e-6 if rate == SAMPLING_RATE else 2e-3)
        for start, end in [(0, 800), (12_345, 40_000), (len(whole) - 500, len(whole) + 300)]:
            stretch = lazy.read(start, end)
            assert len(stretch) == end - start
            inside = whole[start:end]
            assert np.abs(stretch[: len(inside)] - inside).max() < (1e-6 if rate == SAMPLING_RATE else 2e-3)
            assert not stretch[len(inside) :].any()  # zeros past the end
        far = len(whole) - 2_000  # read apart from the first two, which are read as one region
        piece = Piece(0, (Stretch(100, 9_000, 100, 9_000), Stretch(12_000, 30_000, 12_000, 30_000),
                          Stretch(far, len(whole), far, len(whole))))  # fmt: skip
        assert len(piece.samples(lazy)) == len(piece) and far - 30_000 > READ_ACROSS
        assert np.abs(piece.samples(lazy) - piece.samples(whole)).max() < (1e-6 if rate == SAMPLING_RATE else 2e-3)


def test_a_file_path_is_never_loaded_whole_in_the_batched_long_form(toy_speculator, tmp_path, monkeypatch):
    audio = composed([1.0, speech(1), 12.0, speech(3), 35.0, speech(5), 0.5])[0]
    path = tmp_path / "talk.wav"
    soundfile.write(path, audio, SAMPLING_RATE, subtype="FLOAT")
    arguments = dict(language="en", long_form="batched", batch_size=2, return_timestamps=True)
    expected = toy_speculator.transcribe(audio, sampling_rate=SAMPLING_RATE, **arguments)

    def refused(*args, **kwargs):
        raise AssertionError("the whole file was loaded")

    monkeypatch.setattr(audio_module, "load_audio", refused)
    monkeypatch.setattr(AudioFile, "whole", refused)
    monkeypatch.setattr(AudioFile, "samples", refused)
    assert toy_speculator.transcribe(path, **arguments) == expected
    assert expected["text"]


def speech_bounds(clip: np.ndarray) -> tuple[int, int]:
    """Where a synthetic clip's speech starts and ends: its first and last sample above 1% of its peak (the voices
    write digital silence around it)."""
    loud = np.flatnonzero(np.abs(clip) > 0.01 * np.abs(clip).max())
    return int(loud[0]), int(loud[-1]) + 1


def test_speech_is_found_in_the_file_s_time():
    clips = [speech(0), speech(5), speech(2)]
    audio, starts = composed([3.0, clips[0], 6.5, clips[1], 2.0, clips[2], 4.0])
    found = speech_spans(audio)
    margin, tolerance = SPEECH_PAD_MS / 1000 * SAMPLING_RATE, 0.1 * SAMPLING_RATE
    for clip, start in zip(clips, starts, strict=True):
        first, last = (start + bound for bound in speech_bounds(clip))
        inside = [s for s in found if start - tolerance <= s.speech_start < start + len(clip)]
        assert abs(inside[0].speech_start - first) <= tolerance and abs(inside[-1].speech_end - last) <= tolerance
        assert inside[0].start == inside[0].speech_start - margin and inside[-1].end == inside[-1].speech_end + margin
    regions = [(start - tolerance, start + len(clip) + tolerance) for clip, start in zip(clips, starts, strict=True)]
    assert all(any(low <= s.speech_start and s.speech_end <= high for low, high in regions) for s in found)


def test_a_quiet_recording_is_heard_as_a_loud_one(tmp_path):
    """Speech with peaks near 0.001 (about -60 dBFS): Silero alone misses it; scored at a gain, the stretches are those
    of the same recording at full level, from an array and from a file read block by block."""
    clips = [speech(0), speech(5)]
    audio, _ = composed([3.0, clips[0], 6.5, clips[1], 2.0])
    loud = speech_spans(audio / np.abs(audio).max() * 0.5)
    quiet = (audio / np.abs(audio).max() * 0.001).astype(np.float32)
    assert len(speech_spans(quiet)) < len(loud)  # what the detector finds at this level on its own
    path = tmp_path / "quiet.wav"
    soundfile.write(path, quiet, SAMPLING_RATE, subtype="FLOAT")
    tolerance = 0.1 * SAMPLING_RATE
    for found in (clip_speech(quiet), clip_speech(AudioFile(path))):
        assert len(found) == len(loud)
        for mine, theirs in zip(found, loud, strict=True):
            assert abs(mine.speech_start - theirs.speech_start) <= tolerance
            assert abs(mine.speech_end - theirs.speech_end) <= tolerance
    noise = np.random.default_rng(0).normal(0, 0.0003, 20 * SAMPLING_RATE).astype(np.float32)
    assert clip_speech(noise) == [] and clip_speech(np.zeros(SAMPLING_RATE, np.float32)) == []


def music(seconds: float) -> np.ndarray:
    """A tune: random notes of a major scale over three octaves, four harmonics each, struck every quarter second."""
    rng, out = np.random.default_rng(0), np.zeros(int(seconds * SAMPLING_RATE), dtype=np.float32)
    t = np.arange(SAMPLING_RATE // 2) / SAMPLING_RATE
    scale = [261.63, 293.66, 329.63, 349.23, 392.0, 440.0, 493.88]
    for at in range(0, len(out), SAMPLING_RATE // 4):
        pitch = scale[rng.integers(len(scale))] * rng.choice([0.5, 1, 2])
        note = sum(np.sin(2 * np.pi * pitch * h * t) / h for h in (1, 2, 3, 4)) * np.exp(-4 * t)
        out[at : at + len(note)] += 0.15 * note[: len(out) - at]
    return np.clip(out, -1, 1)


def test_silence_noise_and_music_give_no_words(toy_speculator):
    noise = np.clip(0.3 * np.random.default_rng(0).standard_normal(30 * SAMPLING_RATE), -1, 1).astype(np.float32)
    quiet = [silence(60.0), noise, music(30.0)]
    arguments = dict(sampling_rate=SAMPLING_RATE, language="en", long_form="batched")
    assert toy_speculator.transcribe(quiet, **arguments) == ["", "", ""]
    timed = toy_speculator.transcribe(quiet, return_timestamps=True, word_timestamps=True, **arguments)
    assert timed == [{"text": "", "segments": [], "words": []}] * 3
    sequential = toy_speculator.transcribe(noise, sampling_rate=SAMPLING_RATE, language="en")
    assert sequential  # the model writes words into noise when it reads it


def test_the_detector_leaves_torch_s_threads_as_they_were():
    """Importing Silero sets torch to one thread, in a fresh process: the decoding after it must keep its own."""
    script = (
        "import numpy, torch; torch.set_num_threads(2); from seq2spec.whisper.voice_activity import speech_spans; "
        "speech_spans(numpy.zeros(16000, numpy.float32)); print(torch.get_num_threads())"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(SAMPLES.parents[2])})  # fmt: skip
    assert done.returncode == 0 and done.stdout.split()[-1] == "2", done.stderr[-2000:]


def test_each_piece_is_the_model_s_own_output_for_it(toy_speculator):
    files = [
        composed(
            [
                1.0,
                speech(1),
                1.5,
                speech(3),
                0.8,
                speech(4),
                20.0,
                speech(6),
                2.0,
                speech(9),
                2.0,
                speech(10),
                1.0,
                speech(11),
                0.6,
                speech(0),
                3.0,
                speech(2),
                1.0,
                speech(5),
                0.9,
                speech(8),
                1.0,
            ]
        )[0],
        composed([speech(7), 3.0])[0],
        silence(5.0),
        composed([from_first_sound(speech(2)), 1.0])[0],  # speech from the first sample: a piece with a lead-in
    ]
    assert speech_pieces(files[3])[0].lead_in > 0
    arguments = dict(sampling_rate=SAMPLING_RATE, language="en")
    processor = toy_speculator.processor
    batched = toy_speculator.transcribe(files, long_form="batched", batch_size=3, return_timestamps=True, **arguments)
    for audio, result in zip(files, batched, strict=True):
        pieces = speech_pieces(audio, timed=True)
        alone = [toy_speculator.transcribe(piece.samples(audio), return_timestamps=True, **arguments)
                 for piece in pieces]  # fmt: skip
        assert result["text"] == " ".join(text for text in (r["text"] for r in alone) if text)
        for piece, decoded in zip(pieces, alone, strict=True):  # the big model's own greedy generate for the piece
            features = processor.feature_extractor(piece.samples(audio), sampling_rate=SAMPLING_RATE,
                                                   return_tensors="pt")  # fmt: skip
            ids = toy_speculator.big.generate(
                features.input_features, language="en", task="transcribe", return_timestamps=True
            )
            assert decoded["text"] == processor.batch_decode(ids, skip_special_tokens=True)[0].strip()
        expected = [
            {**segment, "start": round(piece.clip_time(segment["start"]), 2),
             "end": round(piece.clip_time(segment["end"], is_end=True), 2)}
            for piece, r in zip(pieces, alone, strict=True) for segment in r["segments"]
        ]  # fmt: skip
        assert result["segments"] == expected
    assert len(speech_pieces(files[0], timed=True)) > len(speech_pieces(files[0]))  # the 20-s pause ends a piece
    pieces = speech_pieces(files[0])  # text alone: joined across it
    assert len(pieces) >= 2 and any(len(piece.stretches) >= 2 for piece in pieces)  # pauses left out inside a piece
    assert batched[0]["text"] and batched[2]["text"] == ""
    plain = toy_speculator.transcribe(files[0], long_form="batched", batch_size=2, **arguments)  # no timestamp tokens
    texts = []
    for piece in pieces:
        features = processor.feature_extractor(piece.samples(files[0]), sampling_rate=SAMPLING_RATE,
                                               return_tensors="pt")  # fmt: skip
        ids = toy_speculator.big.generate(features.input_features, language="en", task="transcribe")
        texts.append(processor.batch_decode(ids, skip_special_tokens=True)[0].strip())
    assert plain == " ".join(text for text in texts if text)


def _base_installed() -> bool:
    from test_default_whisper import _base_installed as installed

    return installed()


@pytest.mark.skipif(not _base_installed(), reason='the embedded base is not installed: "seq2spec[whisper]"')
def test_speech_from_the_first_sample_keeps_its_first_word():
    from seq2spec.default_models import load_whisper_base_pair

    speculator = Seq2SeqSpeculator(*load_whisper_base_pair())
    audio = np.concatenate([from_first_sound(speech(0)), silence(1.0)])  # no silence before the speech
    arguments = dict(sampling_rate=SAMPLING_RATE, language="en")
    # decoded from its first sample, base writes "morning train to the coast ..."
    assert speculator.transcribe(audio, long_form="batched", **arguments).startswith("The morning train")
    assert speculator.transcribe(audio, long_form="vad", **arguments).startswith("The morning train")


@pytest.mark.skipif(not _base_installed(), reason='the embedded base is not installed: "seq2spec[whisper]"')
def test_times_are_in_the_file_s_time_on_speech_with_known_times():
    from seq2spec.default_models import load_whisper_base_pair

    speculator = Seq2SeqSpeculator(*load_whisper_base_pair())
    clips = [speech(0), speech(6), speech(0)]
    audio, starts = composed([4.0, clips[0], 1.5, clips[1], 33.0, clips[2], 3.0])  # the long pause ends a piece
    result = speculator.transcribe(
        audio, sampling_rate=SAMPLING_RATE, language="en", long_form="batched", return_timestamps=True,
        word_timestamps=True,
    )  # fmt: skip
    assert [len(piece.stretches) for piece in speech_pieces(audio, timed=True)] == [2, 1]  # 1.5-s pause left out
    spoken = [tuple((start + bound) / SAMPLING_RATE for bound in speech_bounds(clip))
              for clip, start in zip(clips, starts, strict=True)]  # fmt: skip
    segments = result["segments"]
    # each piece's segments start where its first clip's speech starts and end where its last clip's ends
    assert abs(segments[0]["start"] - spoken[0][0]) <= 0.1, segments
    assert abs(segments[-1]["end"] - spoken[2][1]) <= 0.1 and abs(segments[-1]["start"] - spoken[2][0]) <= 0.1
    # before a pause left out of the piece the model times an end itself, from speech it hears run on: 0.2 s
    assert abs(max(s["end"] for s in segments if s["end"] < spoken[2][0]) - spoken[1][1]) <= 0.2, segments
    for segment in segments:  # none starts or ends in a silence
        assert all(any(low - 0.1 <= segment[key] <= high + 0.1 for low, high in spoken) for key in ("start", "end"))
    for low, high in spoken:
        words = [w for w in result["words"] if low - 0.25 <= w["start"] and w["end"] <= high + 0.25]
        assert len(words) >= 5  # aligned words, in their clip
    assert sum(any(low - 0.25 <= w["start"] and w["end"] <= high + 0.25 for low, high in spoken)
               for w in result["words"]) == len(result["words"])  # none in the silences  # fmt: skip


def talk_and_quiet(tmp_path: Path, talk: np.ndarray, quiet_seconds: float, model: Path) -> tuple[Path, Path, list]:
    """An audio folder holding ``talk.wav`` and ``quiet.wav`` (silence), the JSONL to write and the command's
    arguments with the toy model."""
    folder = tmp_path / "audio"
    folder.mkdir()
    soundfile.write(folder / "talk.wav", talk, SAMPLING_RATE)
    soundfile.write(folder / "quiet.wav", silence(quiet_seconds), SAMPLING_RATE)
    out = tmp_path / "results.jsonl"
    return folder, out, ["transcribe", str(folder), "--out", str(out), "--model", str(model), "--language", "en"]


def test_the_command_s_batched_long_form_resumes(toy_whisper_dirs, tmp_path, capsys):
    talk = composed([2.0, speech(1), 30.0, speech(2), 1.0])[0]
    folder, out, argv = talk_and_quiet(tmp_path, talk, 40.0, toy_whisper_dirs[0])
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


def test_vad_cuts_out_what_is_not_speech_before_the_sequential_long_form(toy_speculator):
    parts: list[np.ndarray | float] = [6.0]
    for index in range(12):
        parts += [speech(index), 4.0 if index % 3 else 45.0]
    audio = composed(parts)[0]
    arguments = dict(sampling_rate=SAMPLING_RATE, language="en", return_timestamps=True, word_timestamps=True)
    result = toy_speculator.transcribe(audio, long_form="vad", **arguments)
    piece = Piece(0, tuple(speech_spans(audio)))
    spoken = piece.samples(audio)
    assert len(spoken) > 30 * SAMPLING_RATE and len(spoken) < len(audio) / 2  # long form, most of it silence
    processor = toy_speculator.processor
    features = processor.feature_extractor(spoken, sampling_rate=SAMPLING_RATE, return_tensors="pt",
                                           truncation=False, padding="longest", return_attention_mask=True)  # fmt: skip
    ids = toy_speculator.big.generate(features.input_features, attention_mask=features.attention_mask, language="en",
                                      task="transcribe", return_timestamps=True)  # fmt: skip
    assert result["text"] == processor.batch_decode(ids, skip_special_tokens=True)[0].strip()  # the model's own
    alone = toy_speculator.transcribe(spoken, **arguments)
    assert result["segments"] == [
        {**s, "start": round(piece.clip_time(s["start"]), 2), "end": round(piece.clip_time(s["end"], is_end=True), 2)}
        for s in alone["segments"]
    ]  # fmt: skip
    assert [w["word"] for w in result["words"]] == [w["word"] for w in alone["words"]]
    quiet = toy_speculator.transcribe([silence(50.0), audio], long_form="vad", **arguments)
    assert quiet[0] == {"text": "", "segments": [], "words": []} and quiet[1] == result


def test_the_command_s_vad_decodes_each_file_s_speech_alone(toy_whisper_dirs, tmp_path):
    talk = composed([3.0, speech(4), 40.0, speech(6), 2.0])[0]
    folder, out, argv = talk_and_quiet(tmp_path, talk, 35.0, toy_whisper_dirs[0])
    assert main([*argv, "--long-form", "vad", "--timestamps"]) == 0
    records = {Path(r["file"]).name: r for r in map(json.loads, out.read_text().splitlines())}
    speculator = Seq2SeqSpeculator(str(toy_whisper_dirs[0]))
    expected = speculator.transcribe(folder / "talk.wav", language="en", long_form="vad", return_timestamps=True)
    assert {key: records["talk.wav"][key] for key in ("text", "segments")} == expected and expected["text"]
    assert records["quiet.wav"]["text"] == "" and records["quiet.wav"]["segments"] == []


@pytest.mark.parametrize("flag", [["--long-form", "batched"], ["--long-form", "vad"]])
def test_a_file_that_fails_part_way_costs_only_its_own_record(toy_whisper_dirs, tmp_path, capsys, flag, monkeypatch):
    """Files whose header reads but whose samples fail further on (a FLAC cut off in a copy, without PyAV to decode
    what it can of it; float samples with a NaN): each gets an error record naming the file and what went wrong, and
    the other files of the batch are decoded together, not retried one by one."""
    monkeypatch.setitem(sys.modules, "av", None)
    talk = composed([2.0, speech(1), 3.0, speech(2), 1.0])[0]
    folder, out, argv = talk_and_quiet(tmp_path, talk, 5.0, toy_whisper_dirs[0])
    soundfile.write(folder / "whole.flac", talk, SAMPLING_RATE, subtype="PCM_16")
    encoded = (folder / "whole.flac").read_bytes()
    (folder / "cut.flac").write_bytes(encoded[: len(encoded) * 2 // 3])
    broken = talk.copy()
    broken[len(broken) // 2] = np.nan
    soundfile.write(folder / "nan.wav", broken, SAMPLING_RATE, subtype="FLOAT")
    assert main([*argv, *flag]) == 1  # files without a transcript
    err = capsys.readouterr().err
    assert "one by one" not in err and "attention mask" not in err
    records = {Path(r["file"]).name: r for r in map(json.loads, out.read_text().splitlines())}
    assert records["cut.flac"]["error"] == f"{folder / 'cut.flac'}: cannot be read as audio (flac decoder lost sync)"
    assert records["nan.wav"]["error"] == f"{folder / 'nan.wav'}: the audio holds NaN or infinite samples"
    assert records["talk.wav"]["text"] and records["whole.flac"]["text"] == records["talk.wav"]["text"]
    assert records["quiet.wav"]["text"] == ""
