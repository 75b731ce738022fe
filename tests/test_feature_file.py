"""Long files' features kept in a temporary file: the same values, the same transcripts, and the memory of frames
written or passed by every window handed back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.whisper import feature_file
from seq2spec.whisper.audio import SAMPLING_RATE, load_audio
from seq2spec.whisper.feature_file import FeatureFile, worth_a_file

SAMPLES = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples"
needs_madvise = pytest.mark.skipif(feature_file._madvise() is None, reason="memory is handed back on Linux only")


def _resident_kb(path: str) -> int:
    """The resident kilobytes of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        first = line.split()[0] if line.split() else ""
        if "-" in first and not first.endswith(":"):  # a mapping's header line
            inside = line.rstrip().endswith(path)
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@needs_madvise
def test_features_in_a_file_read_the_same_and_hand_back_passed_frames():
    features = torch.randn(2, 80, 30_000)
    store = FeatureFile(2, 80, 30_000)
    name = store._file.name
    try:
        store.tensor.copy_(features)
        assert _resident_kb(name) > 15_000  # 2 x 80 x 30,000 floats written: 18,750 KB
        store.release_before([30_000, 12_000])
        assert _resident_kb(name) < 7_000  # 18,000 frames of the second row left: 5,625 KB
        assert torch.equal(store.tensor, features)  # what was handed back is read from the file again
        store.release(0, 0)  # nothing to hand back
    finally:
        store.close()
    assert not Path(name).exists()


def test_only_large_features_go_to_a_file(monkeypatch):
    monkeypatch.setattr(feature_file, "FILE_BYTES", 1000)
    assert worth_a_file(1, 80, 3000) == (feature_file._madvise() is not None)
    assert not worth_a_file(1, 80, 3)


@needs_madvise
def test_a_long_file_s_features_in_a_file_give_its_transcript(toy_whisper_dirs, tmp_path, monkeypatch):
    speculator = Seq2SeqSpeculator(str(toy_whisper_dirs[0]), str(toy_whisper_dirs[1]))
    clips = [load_audio(path) for path in sorted(SAMPLES.glob("clip*.wav"))[:12]]
    talk = np.concatenate([np.concatenate([clip, np.zeros(SAMPLING_RATE // 2, np.float32)]) for clip in clips])
    long_path = tmp_path / "talk.wav"
    soundfile.write(long_path, talk, SAMPLING_RATE)
    arguments = dict(language="en", return_timestamps=True, batch_size=2)
    expected = speculator.transcribe([long_path, long_path], **arguments)
    assert all(result["text"] for result in expected)

    made, released = [], []
    original_init, original_release = FeatureFile.__init__, FeatureFile.release_before

    def init(self, *shape, **options):
        made.append(shape)
        original_init(self, *shape, **options)

    def release(self, seeks):
        released.append(list(seeks))
        original_release(self, seeks)

    monkeypatch.setattr(feature_file, "FILE_BYTES", 0)
    monkeypatch.setattr(FeatureFile, "__init__", init)
    monkeypatch.setattr(FeatureFile, "release_before", release)
    assert speculator.transcribe([long_path, long_path], **arguments) == expected
    assert len(made) == 1 and made[0][0] == 2  # the long batch's features, once
    assert len(released) >= 2 and max(released[-1]) > 0  # windows decoded: their frames handed back
