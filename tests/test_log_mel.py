"""Whisper's features of long files computed block by block as they are read: bit for bit the extractor's, and the
sequential long form never holds a file whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch
from transformers import WhisperFeatureExtractor

from seq2spec import Seq2SeqSpeculator
from seq2spec.whisper import audio as audio_module
from seq2spec.whisper import feature_file
from seq2spec.whisper.audio import SAMPLING_RATE, AudioFile, load_audio
from seq2spec.whisper.log_mel import FRAMES_AT_ONCE, BlockLogMel, computes_like

SAMPLES = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples"
HOP = 160


def in_random_blocks(samples: np.ndarray, rng: np.random.Generator):
    at = 0
    while at < len(samples):
        size = int(rng.integers(1, 300)) if rng.random() < 0.2 else int(rng.integers(300, 200_000))
        yield samples[at : at + size]
        at += size


@pytest.mark.parametrize("lengths_known", [True, False])
@pytest.mark.parametrize("mel_bins", [80, 128])
@pytest.mark.parametrize(
    "lengths",
    [
        [95 * SAMPLING_RATE],
        [40 * SAMPLING_RATE + 37, 40 * SAMPLING_RATE - 100, 31 * SAMPLING_RATE + 1, 5_000, 150],  # padded rows
        [480_001, 480_001 - HOP],  # within one frame of the longest: the end's reflection reads real samples
        [(FRAMES_AT_ONCE + 1) * HOP + 7, 60 * SAMPLING_RATE],  # a last block of a single frame
    ],
)
@pytest.mark.parametrize("in_a_file", [False, True])
def test_blocks_give_the_extractor_s_features_bit_for_bit(mel_bins, lengths, lengths_known, in_a_file, monkeypatch):
    if in_a_file:  # every batch's features kept in a file (``feature_file``), their pages handed back as written
        monkeypatch.setattr(feature_file, "FILE_BYTES", 0)
    rng = np.random.default_rng(len(lengths) * mel_bins)
    extractor = WhisperFeatureExtractor(feature_size=mel_bins)
    clips = [(rng.standard_normal(n) * rng.uniform(0.01, 0.5)).astype(np.float32) for n in lengths]
    clips[0][: 3 * SAMPLING_RATE] = 0.0  # digital silence: the clamp below the loudest value decides these frames
    expected = extractor(clips, sampling_rate=SAMPLING_RATE, truncation=False, padding="longest",
                         return_attention_mask=True, return_tensors="pt")  # fmt: skip
    guesses = [len(clip) + (0 if lengths_known else int(rng.integers(-20_000, 20_000))) for clip in clips]
    got = BlockLogMel(extractor)([in_random_blocks(clip, rng) for clip in clips], guesses)
    assert torch.equal(got["input_features"], expected["input_features"])
    assert torch.equal(got["attention_mask"], expected["attention_mask"])
    assert got["lengths"].tolist() == lengths
    filed = in_a_file and lengths_known and feature_file._madvise() is not None
    assert (got["file"] is not None) == filed  # a wrong length: the rows come back in memory of their own
    if got["file"] is not None:
        got["file"].close()


def test_only_whisper_s_own_extractor_settings_are_computed_in_blocks():
    assert computes_like(WhisperFeatureExtractor())
    assert not computes_like(WhisperFeatureExtractor(dither=0.1))
    assert not computes_like(WhisperFeatureExtractor(do_normalize=True))
    assert not computes_like(WhisperFeatureExtractor(padding_value=1.0))


def test_the_sequential_long_form_reads_files_block_by_block(toy_whisper_dirs, tmp_path, monkeypatch):
    speculator = Seq2SeqSpeculator(str(toy_whisper_dirs[0]), str(toy_whisper_dirs[1]))
    clips = [load_audio(path) for path in sorted(SAMPLES.glob("clip*.wav"))[:12]]
    talk = np.concatenate([np.concatenate([clip, np.zeros(SAMPLING_RATE // 2, np.float32)]) for clip in clips])
    long_path, short_path = tmp_path / "talk.wav", tmp_path / "short.flac"
    stereo = np.stack([talk, 0.5 * talk], axis=1)
    import soxr

    soundfile.write(long_path, soxr.resample(stereo, SAMPLING_RATE, 48_000).astype(np.float32), 48_000,
                    subtype="FLOAT")  # fmt: skip
    soundfile.write(short_path, clips[0], SAMPLING_RATE)
    assert len(AudioFile(long_path)) > 31 * SAMPLING_RATE
    arrays = [load_audio(long_path), load_audio(short_path), clips[1]]
    arguments = dict(language="en", return_timestamps=True, batch_size=3)
    expected = speculator.transcribe(arrays, sampling_rate=SAMPLING_RATE, **arguments)
    assert all(result["text"] for result in expected)

    def refused(*args, **kwargs):
        raise AssertionError("a long file was read whole")

    original_samples = AudioFile.samples

    def short_only(self):
        assert len(self) <= 31 * SAMPLING_RATE, "a long file was read whole"
        return original_samples(self)

    monkeypatch.setattr(audio_module, "load_audio", refused)
    monkeypatch.setattr(AudioFile, "whole", refused)
    monkeypatch.setattr(AudioFile, "samples", short_only)
    got = speculator.transcribe([long_path, short_path, clips[1]], sampling_rate=SAMPLING_RATE, **arguments)
    assert got == expected
