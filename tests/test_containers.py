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
