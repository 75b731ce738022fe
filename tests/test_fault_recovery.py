"""Faults a real run meets, and how a run recovers: a batch that fails is decoded file by file, error records are
tried again, Ctrl-C and SIGTERM end with one line, standard input is read as UTF-8 whatever the locale, line ends
come back as written, arrays are scaled or refused, float files past full scale are scaled back, a link that leads
nowhere gets an error record, and times stay within the audio."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile
from fault_tools import Launcher
from synthetic_audio import tone

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.main import main
from seq2spec.commands.stopping import Terminated, sigterm_as_interrupt, stops_deferred
from seq2spec.whisper import records as transcript_records
from seq2spec.whisper.audio import AudioFile, duration_seconds, load_audio
from seq2spec.whisper.audio_types import AudioError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def launcher() -> Launcher:
    return Launcher()


@pytest.fixture(scope="module")
def text_model(toy_byte_models, tmp_path_factory) -> Path:
    big, _, tokenizer = toy_byte_models
    folder = tmp_path_factory.mktemp("text_model") / "big"
    big.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def records_by_name(path: Path) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        found.setdefault(Path(record["file"]).name, []).append(record)
    return found


def speech_folder(root: Path) -> Path:
    """Silence, noise, ordinary clips, and a file that is not audio yet (``later.wav``)."""
    folder = root / "audio"
    folder.mkdir()
    soundfile.write(folder / "silence.wav", np.zeros(16000 * 3, dtype=np.float32), 16000)
    soundfile.write(folder / "noise.wav", tone(2.0, 16000, 1, 0), 16000)
    soundfile.write(folder / "tone_a.wav", tone(1.5, 16000, 1, 2), 16000)
    soundfile.write(folder / "tone_b.wav", tone(2.5, 16000, 1, 3), 16000)
    (folder / "broken.wav").write_bytes(b"RIFF\x00\x00")
    (folder / "later.wav").write_text("a download still in progress\n")
    return folder


# ----------------------------------------------------------------------------- transcribe: a folder that recovers


def test_failed_files_are_tried_again_and_the_status_says_what_is_missing(toy_whisper_dirs, tmp_path, capsys):
    folder = speech_folder(tmp_path)
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(folder), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    argv += ["--temperature-fallback", "--timestamps", "--batch-size", "3"]
    assert main(argv) == 1  # every file it could read is written; two have none
    first = records_by_name(out)
    assert set(first) == {"silence.wav", "noise.wav", "tone_a.wav", "tone_b.wav", "broken.wav", "later.wav"}
    assert "error" in first["broken.wav"][0] and "error" in first["later.wav"][0]
    assert all("text" in first[name][0] for name in ("silence.wav", "noise.wav", "tone_a.wav", "tone_b.wav"))

    soundfile.write(folder / "later.wav", tone(1.0, 16000, 1, 6), 16000)  # the file is complete now
    capsys.readouterr()
    assert main(argv) == 1  # broken.wav still has no transcript
    assert "2 to transcribe (2 that failed before tried again)" in capsys.readouterr().err
    second = records_by_name(out)
    assert all(len(records) == 1 for records in second.values())  # a new record replaces the old error
    assert "text" in second["later.wav"][0] and "error" in second["broken.wav"][0]
    assert {name: second[name] for name in first if name not in ("later.wav",)} == {
        name: first[name] for name in first if name != "later.wav"
    }

    capsys.readouterr()
    assert main([*argv, "--skip-failed"]) == 0  # the old behaviour on request: error records count as done
    assert "0 to transcribe" in capsys.readouterr().err
    (folder / "broken.wav").unlink()
    assert main(argv) == 0  # every input has its transcript
    assert records_by_name(out) == second


def test_a_batch_that_fails_is_decoded_file_by_file(toy_whisper_dirs, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "audio"
    folder.mkdir()
    for index in range(5):
        soundfile.write(folder / f"clip{index}.wav", tone(1.0 + index / 4, 16000, 1, index), 16000)
    real = transcript_records.transcribe_records

    def fails_with_clip2(speculator, paths, request, **options):
        if any(path.name == "clip2.wav" for path in paths):
            raise RuntimeError("a decoding fault on clip2")
        return real(speculator, paths, request, **options)

    monkeypatch.setattr(transcript_records, "transcribe_records", fails_with_clip2)
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(folder), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    assert main([*argv, "--batch-size", "5"]) == 1
    assert "a batch of 5 files failed (RuntimeError: a decoding fault on clip2); decoding them one by one" in (
        capsys.readouterr().err
    )
    records = {name: found[0] for name, found in records_by_name(out).items()}
    assert records["clip2.wav"]["error"] == "decoding failed (RuntimeError: a decoding fault on clip2)"
    monkeypatch.setattr(transcript_records, "transcribe_records", real)
    alone = tmp_path / "alone.jsonl"
    assert main([*argv, "--out", str(alone), "--batch-size", "1"]) == 0
    expected = {name: found[0] for name, found in records_by_name(alone).items()}
    for name in ("clip0.wav", "clip1.wav", "clip3.wav", "clip4.wav"):
        assert records[name]["text"] == expected[name]["text"]


def _base_installed() -> bool:
    from test_default_whisper import _base_installed as installed

    return installed()


@pytest.mark.skipif(not _base_installed(), reason='the embedded base is not installed: "seq2spec[whisper]"')
def test_fallback_over_silence_and_noise_in_one_batch(tmp_path, capsys):
    """Whisper's fallback skips every window of the noise as no speech: generate then returns a float tensor for the
    batch, which must be read as the token ids it holds."""
    from seq2spec.default_models import load_whisper_base_pair
    from seq2spec.whisper.request import WhisperDecoding

    silence = np.zeros(16000 * 35, dtype=np.float32)
    noise = 0.3 * np.random.default_rng(0).standard_normal(16000 * 31).astype(np.float32)
    speculator = Seq2SeqSpeculator(*load_whisper_base_pair())
    fallback = WhisperDecoding(temperature_fallback=True)
    texts = speculator.transcribe([silence, noise], sampling_rate=16000, language="en", decoding=fallback)
    assert texts[1] == ""  # every window skipped
    assert texts[0] == speculator.transcribe(silence, sampling_rate=16000, language="en", decoding=fallback)

    folder = tmp_path / "audio"
    folder.mkdir()
    soundfile.write(folder / "silence.wav", silence, 16000)
    soundfile.write(folder / "noise.wav", noise, 16000)
    out = tmp_path / "results.jsonl"
    capsys.readouterr()
    assert main(["transcribe", str(folder), "--out", str(out), "--temperature-fallback", "--language", "en"]) == 0
    assert "failed" not in capsys.readouterr().err.replace("(0 failed)", "")  # decoded as one batch
    records = {name: found[0] for name, found in records_by_name(out).items()}
    assert [records["silence.wav"]["text"], records["noise.wav"]["text"]] == texts


# ----------------------------------------------------------------------------- Ctrl-C and SIGTERM


def wait_for(condition, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while not condition():
        if time.time() > deadline:
            raise TimeoutError("the run did not get far enough")
        time.sleep(0.05)


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_stop_while_a_file_is_read_is_raised_not_swallowed(tmp_path):
    """libsndfile must read the file itself: a file object is read through Python callbacks, and a Ctrl-C raised in
    one of them is printed and swallowed by cffi, the read coming back short and the run going on. Here a
    KeyboardInterrupt is raised in the first Python function soundfile calls back while reading."""
    samples = tone(3.0, 16000, 1, 7)
    path = tmp_path / "clip.wav"
    soundfile.write(path, samples, 16000)

    def interrupt_in_callbacks(frame, event, argument):
        if event == "call" and frame.f_code.co_name.startswith("vio_"):
            raise KeyboardInterrupt

    readers = {
        "load_audio": lambda: load_audio(path),
        "AudioFile.blocks": lambda: np.concatenate(list(AudioFile(path).blocks(1.0))),
        "AudioFile.read": lambda: AudioFile(path).read(0, len(samples)),
        "duration_seconds": lambda: np.zeros(round(duration_seconds(path) * 16000)),
    }
    for name, read in readers.items():
        sys.setprofile(interrupt_in_callbacks)
        try:
            got = read()
        finally:
            sys.setprofile(None)
        assert len(got) == len(samples), name


def test_an_unreadable_file_is_named_without_a_descriptor_number(tmp_path):
    """Read by its descriptor, libsndfile says "Error opening 40: ...": the number changes from run to run (a cluster's
    record and a local one differed by it), so the reason is given without it."""
    path = tmp_path / "noise.wav"
    path.write_bytes(b"not audio at all" * 64)
    for read in (lambda: load_audio(path), lambda: AudioFile(path)):
        with pytest.raises(AudioError) as raised:
            read()
        assert str(raised.value) == f"{path}: cannot be read as audio (Format not recognised)"


@pytest.mark.parametrize("stop, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_correct_says_what_it_kept_and_continues(launcher, text_model, tmp_path, stop, status):
    source = tmp_path / "lines.txt"
    source.write_text("".join(f"line number {i} of the text\n" for i in range(1500)), encoding="utf-8")
    out = tmp_path / "out.txt"
    argv = ["correct", str(source), "--model", str(text_model), "--max-new-tokens", "8", "--chunk-size", "4"]
    process = launcher.start([*argv, "--out", str(out)])
    wait_for(lambda: lines_in(tmp_path / "out.txt.partial") >= 8)
    os.kill(process.pid, stop)
    process.join(60)
    finished = launcher._finished(process)
    assert finished.code == status, finished.log
    assert "Traceback" not in finished.log
    last = finished.log.strip().splitlines()[-1]
    assert last.startswith("seq2spec correct: stopped; ") and "lines kept in" in last and "rerun to continue" in last
    kept = lines_in(tmp_path / "out.txt.partial")
    assert f"stopped; {kept} lines kept" in last
    finished = launcher.run([*argv, "--out", str(out)], timeout=600)
    assert finished.code == 0 and f"{kept} lines already done" in finished.log
    assert lines_in(out) == 1500


@pytest.mark.parametrize("stop, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_transcribe_says_what_it_kept(launcher, toy_whisper_dirs, tmp_path, stop, status):
    folder = tmp_path / "audio"
    folder.mkdir()
    for index in range(400):
        soundfile.write(folder / f"clip{index:03d}.wav", tone(1.0, 16000, 1, index), 16000)
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(folder), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    process = launcher.start([*argv, "--batch-size", "2"])
    wait_for(lambda: lines_in(out) >= 4)
    os.kill(process.pid, stop)
    process.join(60)
    finished = launcher._finished(process)
    assert finished.code == status and "Traceback" not in finished.log, finished.log
    kept = lines_in(out)
    assert f"stopped; {kept} files transcribed in this run are kept in {out}, rerun to continue" in finished.log


# ----------------------------------------------------------------------------- standard input and line ends


@pytest.mark.parametrize("stop, raised", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_a_stop_during_a_write_waits_for_the_write_to_be_counted(stop, raised):
    """A stop arriving between a chunk's write and its count would make the message name fewer lines than were
    kept; within ``stops_deferred`` it is raised only once the block has finished."""
    done = []
    with sigterm_as_interrupt(), pytest.raises(raised):
        with stops_deferred():
            signal.raise_signal(stop)
            done.append("written")
            done.append("counted")
    assert done == ["written", "counted"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_bytes_that_are_not_utf8_are_named_whatever_the_locale(text_model):
    environment = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONPATH": str(ROOT)}
    environment.pop("PYTHONIOENCODING", None)
    done = subprocess.run(
        [sys.executable, "-m", "seq2spec", "correct", "--model", str(text_model), "--max-new-tokens", "4"],
        input=b"good line\nCaf\xe9\nnever read\n",
        capture_output=True,
        env=environment,
        timeout=300,
    )
    error = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2 and "Traceback" not in error, error
    assert "standard input is not UTF-8 text after line 1" in error and "the 1 lines before it are kept" in error
    assert done.stdout.count(b"\n") == 1  # the line before the fault is corrected and written


def test_line_ends_come_back_as_written(text_model, tmp_path, monkeypatch, capsys):
    source = tmp_path / "in.txt"
    source.write_bytes(b"first line\r\nsecond line\r\nthird line\nlast line")
    out = tmp_path / "out.txt"
    argv = ["correct", str(source), "--model", str(text_model), "--max-new-tokens", "6"]
    assert main([*argv, "--out", str(out)]) == 0
    written = out.read_bytes()
    assert written.count(b"\r\n") == 2 and written.count(b"\n") == 4
    assert written.split(b"\r\n")[2].count(b"\n") == 2  # the third line ends as it did, the last gets "\n"

    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\r\ntwo\n"), encoding="utf-8"))
    assert main(argv[:1] + argv[2:]) == 0  # the same from standard input
    written = capsys.readouterr().out
    assert written.count("\r\n") == 1 and written.endswith("\n") and written.count("\n") == 2


def test_a_link_to_itself_is_named(toy_whisper_dirs, text_model, tmp_path, capsys):
    loop = tmp_path / "loop.wav"
    loop.symlink_to(loop)
    out = tmp_path / "results.jsonl"
    assert main(["transcribe", str(loop), "--out", str(out), "--model", str(toy_whisper_dirs[0])]) == 2
    assert "symbolic link that leads nowhere" in capsys.readouterr().err
    assert main(["correct", str(loop), "--model", str(text_model)]) == 2
    assert "points back to itself" in capsys.readouterr().err


def test_a_link_that_leads_nowhere_inside_a_folder_gets_an_error_record(toy_whisper_dirs, tmp_path):
    folder = tmp_path / "audio"
    folder.mkdir()
    soundfile.write(folder / "tone.wav", tone(1.5, 16000, 1, 2), 16000)
    (folder / "moved.wav").symlink_to(tmp_path / "elsewhere" / "moved.wav")
    out = tmp_path / "results.jsonl"
    assert main(["transcribe", str(folder), "--out", str(out), "--model", str(toy_whisper_dirs[0])]) == 1
    records = records_by_name(out)
    assert "text" in records["tone.wav"][0]
    error = records["moved.wav"][0]["error"]
    assert error.endswith("moved.wav: no such file: removed, or a symbolic link that leads nowhere")


# ----------------------------------------------------------------------------- float files past full scale


@pytest.mark.parametrize("rate, channels", [(16000, 1), (44100, 2)])
def test_a_float_file_past_full_scale_is_scaled_back_by_its_peak(whisper_speculator, tmp_path, rate, channels):
    """An editor's float export of amplified speech and floats written at 16-bit scale read, whole and stretch by
    stretch, as the same audio at full scale (scaled by powers of two here, so bit for bit), and transcribe as it
    does in both long forms; integer files and float files within full scale are read as stored."""
    import soxr

    from seq2spec.whisper.audio import AudioFile, load_audio

    speech, stored_rate = soundfile.read(ROOT / "recipes" / "data" / "asr_samples" / "clip00_flite_slt.wav")
    speech = soxr.resample(speech, stored_rate, rate)
    audio = np.stack([speech * (1 - 0.3 * channel) for channel in range(channels)], axis=1)
    unit = (audio / np.abs(audio).max()).astype(np.float32)  # peak exactly 1
    full_path = _written(tmp_path / "full.wav", unit, rate, "FLOAT")
    full, full_file = load_audio(full_path), AudioFile(full_path)
    assert full_file.gain == 1.0 and AudioFile(_written(tmp_path / "pcm.wav", unit, rate, "PCM_16")).gain == 1.0
    half = load_audio(_written(tmp_path / "half.wav", unit / 2, rate, "FLOAT"))
    assert np.array_equal(half * 2, full)  # within full scale: as stored
    expected = [whisper_speculator.transcribe(full, sampling_rate=16000, language="en", long_form=form)
                for form in ("sequential", "batched")]  # fmt: skip
    assert all(expected)  # both forms decode speech
    for peak in (4.0, 32768.0):
        path = _written(tmp_path / f"peak_{peak:g}.wav", unit * peak, rate, "FLOAT")
        assert np.array_equal(load_audio(path), full)
        lazy = AudioFile(path)
        assert lazy.gain == 1 / peak
        blocks = list(zip(lazy.blocks(1.1), full_file.blocks(1.1), strict=True))
        assert len(blocks) > 1 and all(np.array_equal(mine, theirs) for mine, theirs in blocks)
        assert np.array_equal(lazy.read(1000, 9000), full_file.read(1000, 9000))
        assert [whisper_speculator.transcribe(str(path), language="en", long_form=form)
                for form in ("sequential", "batched")] == expected  # fmt: skip


def _written(path: Path, samples: np.ndarray, rate: int, subtype: str) -> Path:
    soundfile.write(path, samples, rate, subtype=subtype)
    return path


# ----------------------------------------------------------------------------- arrays given to transcribe()


@pytest.fixture(scope="module")
def whisper_speculator(toy_whisper_dirs) -> Seq2SeqSpeculator:
    return Seq2SeqSpeculator(str(toy_whisper_dirs[0]), str(toy_whisper_dirs[1]))


def test_integer_arrays_are_scaled_by_their_type(whisper_speculator):
    import torch

    as_int16 = np.round(tone(2.0, 16000, 1, 2) * 0.9 * 32767).astype(np.int16)
    expected = whisper_speculator.transcribe(as_int16.astype(np.float32) / 32768, sampling_rate=16000, language="en")
    assert whisper_speculator.transcribe(as_int16, sampling_rate=16000, language="en") == expected
    as_int32 = as_int16.astype(np.int32) << 16
    assert whisper_speculator.transcribe(as_int32, sampling_rate=16000, language="en") == expected
    assert whisper_speculator.transcribe(torch.from_numpy(as_int16), sampling_rate=16000, language="en") == expected


@pytest.mark.parametrize(
    "samples, message",
    [
        (np.full(16000, 1200.0, dtype=np.float32), "float audio samples must lie in [-1, 1], these reach 1200"),
        (np.zeros((2, 16000), dtype=np.float32), "audio[0]: audio of shape (2, 16000) has fewer frames than channels"),
        (np.zeros(16000, dtype=bool), "audio samples must be numbers"),
    ],
)
def test_arrays_that_are_not_audio_as_expected_are_refused(whisper_speculator, samples, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        whisper_speculator.transcribe(samples, sampling_rate=16000, language="en")


# ----------------------------------------------------------------------------- times within the audio


def test_times_past_the_end_of_the_audio_are_clipped_to_it():
    from seq2spec.whisper.transcription import clipped_to

    result = {
        "text": "hello there",
        "segments": [{"start": 0.0, "end": 3.5, "text": "hello"}, {"start": 599.96, "end": 609.96, "text": "there"}],
        "words": [{"word": "hello", "start": 0.5, "end": 1.0}, {"word": "there", "start": 599.98, "end": 605.0}],
    }
    clipped = clipped_to(result, 600.0)
    assert clipped["segments"][1] == {"start": 599.96, "end": 600.0, "text": "there"}
    assert clipped["words"][1]["end"] == 600.0 and clipped["segments"][0]["end"] == 3.5
    assert clipped_to("plain text", 1.0) == "plain text"


def test_no_time_passes_the_end_of_its_file(toy_whisper_dirs, tmp_path):
    folder = tmp_path / "audio"
    folder.mkdir()
    for index, seconds in enumerate((0.3, 2.0, 30.04, 31.5)):
        soundfile.write(folder / f"clip{index}.wav", tone(seconds, 16000, 1, index + 1), 16000)
    out = tmp_path / "results.jsonl"
    argv = ["transcribe", str(folder), "--out", str(out), "--model", str(toy_whisper_dirs[0]), "--language", "en"]
    assert main([*argv, "--word-timestamps", "--timestamps"]) == 0
    for line in out.read_text().splitlines():
        record = json.loads(line)
        for item in record.get("segments", []) + record.get("words", []):
            for key in ("start", "end"):
                assert item[key] is None or item[key] <= record["duration"] + 0.005, (record["file"], item)
