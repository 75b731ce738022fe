"""Audio in containers soundfile cannot read (.m4a voice memos, .mp4 and .webm recordings) is read through PyAV:
found in folders, decoded to 16 kHz mono, read stretch by stretch in the batched long form, and without PyAV each
such file gets an error record that says what to install."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from seq2spec.commands.main import main
from seq2spec.whisper.audio import SAMPLING_RATE, AudioError, AudioFile, duration_seconds, find_audio, load_audio

av = pytest.importorskip("av")
SAMPLE = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples" / "clip00_flite_slt.wav"


def encoded(path: Path, samples: np.ndarray, codec: str, rate: int) -> Path:
    """``samples`` (16 kHz mono) written to ``path`` with ``codec`` at ``rate`` Hz."""
    import soxr

    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=rate)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(
            soxr.resample(samples, SAMPLING_RATE, rate).astype(np.float32)[None, :], format="flt", layout="mono"
        )
        frame.rate = rate
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    return path


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    return load_audio(SAMPLE)


@pytest.mark.parametrize(("name", "codec", "rate"), [("memo.m4a", "aac", 44_100), ("call.webm", "libopus", 48_000)])
def test_a_container_is_read_as_its_audio(tmp_path, speech, name, codec, rate):
    path = encoded(tmp_path / name, np.concatenate([speech, speech]), codec, rate)
    samples = load_audio(path)
    assert samples.dtype == np.float32 and abs(len(samples) - 2 * len(speech)) < 0.1 * SAMPLING_RATE
    assert abs(float(np.sqrt(np.mean(samples**2))) / float(np.sqrt(np.mean(speech**2))) - 1) < 0.1  # same level
    assert abs(duration_seconds(path) - 2 * len(speech) / SAMPLING_RATE) < 0.1
    lazily = AudioFile(path)
    decoded = lazily.source
    assert decoded != path and decoded.exists() and len(lazily) == len(samples)
    assert np.array_equal(np.concatenate(list(lazily.blocks(seconds=1.0))), samples)
    assert np.array_equal(lazily.read(1_000, 20_000), samples[1_000:20_000])
    del lazily
    assert not decoded.exists()  # the decoded copy goes with its AudioFile
    assert path in find_audio([tmp_path])


def test_a_container_without_audio_or_unreadable_names_the_file(tmp_path):
    broken = tmp_path / "broken.m4a"
    broken.write_bytes(b"not a container at all")
    with pytest.raises(AudioError, match="broken.m4a: cannot be read as audio"):
        load_audio(broken)


def test_the_command_transcribes_containers_and_says_what_they_need_without_pyav(
    toy_whisper_dirs, tmp_path, speech, monkeypatch, capsys
):
    big, draft = toy_whisper_dirs
    folder = tmp_path / "recordings"
    folder.mkdir()
    encoded(folder / "memo.m4a", speech, "aac", 44_100)
    out = tmp_path / "out.jsonl"
    arguments = ["transcribe", str(folder), "--out", str(out), "--model", str(big), "--assistant", str(draft)]
    assert main(arguments) == 0
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["file"].endswith("memo.m4a") and "error" not in record and "text" in record
    monkeypatch.setitem(sys.modules, "av", None)  # PyAV missing: the file is found, and its record says why not
    out.unlink()
    main(arguments)
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert "needs PyAV: pip install av" in record["error"] and "memo.m4a" in record["error"]


def _wav_header_never_finished(path: Path, samples: np.ndarray) -> Path:
    """16-bit PCM after a RIFF header whose sizes are still 0, as a recorder killed before closing a file leaves it."""
    import struct

    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, SAMPLING_RATE, 2 * SAMPLING_RATE, 2, 16)
    path.write_bytes(b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + fmt + b"data" + struct.pack("<I", 0) + pcm)
    return path


def _cut_flac(path: Path, samples: np.ndarray) -> Path:
    import soundfile

    soundfile.write(path, samples, SAMPLING_RATE, subtype="PCM_16")
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    return path


def test_what_soundfile_cannot_read_is_read_through_pyav(tmp_path, speech, caplog):
    """A WAV whose header was never finished (soundfile: no samples), a FLAC cut off half-way (soundfile: "lost
    sync") and an m4a named .wav (soundfile: "Format not recognised") are decoded by PyAV as far as they go, read
    whole and stretch by stretch alike, with a warning naming the file."""
    two = np.concatenate([speech, speech])
    unfinished = _wav_header_never_finished(tmp_path / "unfinished.wav", two)
    cut = _cut_flac(tmp_path / "cut.flac", two)
    misnamed = encoded(tmp_path / "memo.m4a", two, "aac", 44_100).rename(tmp_path / "misnamed.wav")
    whole = load_audio(unfinished)
    assert len(whole) == len(two) and np.abs(whole - two).max() < 1e-4
    part = load_audio(cut)
    assert 0.3 * len(two) < len(part) < 0.6 * len(two) and np.abs(part - two[: len(part)]).max() < 1e-4
    assert abs(len(load_audio(misnamed)) - len(two)) < 0.1 * SAMPLING_RATE
    for path in (unfinished, cut, misnamed):
        assert f"{path}: soundfile cannot read it" in caplog.text
        lazily = AudioFile(path)
        from seq2spec.whisper.speech import clip_speech

        assert clip_speech(lazily)  # the scan that reads it to its end
        assert np.array_equal(np.concatenate(list(lazily.blocks())), load_audio(path))


def test_without_pyav_what_soundfile_cannot_read_keeps_its_error(tmp_path, speech, monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(AudioError, match=r"unfinished.wav: contains no audio samples"):
        load_audio(_wav_header_never_finished(tmp_path / "unfinished.wav", speech))
    with pytest.raises(AudioError, match=r"cut.flac: cannot be read as audio \(flac decoder lost sync\)"):
        load_audio(_cut_flac(tmp_path / "cut.flac", speech))
