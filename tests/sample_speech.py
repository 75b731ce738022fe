"""Test-only: base's encoder output of a sample clip in recipes/data (speech, so a Whisper draft writes words)."""

from __future__ import annotations

from pathlib import Path

import torch

SAMPLE_CLIP = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples" / "clip00_flite_slt.wav"


@torch.no_grad()
def encoder_output(big, path: Path = SAMPLE_CLIP) -> torch.Tensor:
    """``big``'s encoder output ``[frames, width]`` of the clip at ``path``."""
    import soundfile
    from transformers import WhisperFeatureExtractor

    samples, rate = soundfile.read(path, dtype="float32")
    features = WhisperFeatureExtractor()(samples, sampling_rate=rate, return_tensors="pt").input_features
    return big.model.encoder(features).last_hidden_state[0]
