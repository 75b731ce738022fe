"""Whisper log-mel features for a draft that takes another number of mel bins than the big model.

Whisper large-v3 and its turbo take 128 mel bins; tiny, base, small, medium and the English-only models take 80. A
draft of the other kind reads the big model's features re-binned: the log-mel energies undone, mapped from one mel
filter bank to the other through the power spectrum both were taken from (the least-squares spectrum behind the
given bands), and the log-mel steps of Whisper's feature extractor applied again. The result is close to what the
draft's own feature extractor gives (on speech within about 0.01 of a feature range of about 2) but not equal; only
the draft reads it, so it changes how often the draft agrees, never what the big model outputs.
"""

from __future__ import annotations

from functools import lru_cache

import torch
from transformers.audio_utils import mel_filter_bank

# Whisper's feature extractor: 16 kHz, a 400-point FFT (201 frequency bins), bands from 0 to 8 kHz, Slaney's mel scale
FREQUENCY_BINS = 201
SAMPLING_RATE = 16000
LOG_FLOOR = 1e-10
DYNAMIC_RANGE = 8.0  # log10 units kept below each input's loudest band


@lru_cache(maxsize=8)
def rebinning(source_bins: int, target_bins: int) -> torch.Tensor:
    """``[target_bins, source_bins]``: mel energies of one filter bank to those of the other (float64)."""

    def bank(bins: int) -> torch.Tensor:
        filters = mel_filter_bank(
            num_frequency_bins=FREQUENCY_BINS,
            num_mel_filters=bins,
            min_frequency=0.0,
            max_frequency=SAMPLING_RATE / 2,
            sampling_rate=SAMPLING_RATE,
            norm="slaney",
            mel_scale="slaney",
        )
        return torch.from_numpy(filters).to(torch.float64).T  # [bins, frequency bins]

    return bank(target_bins) @ torch.linalg.pinv(bank(source_bins))


def rebin_log_mel(features: torch.Tensor, bins: int) -> torch.Tensor:
    """Whisper's normalised log-mel ``features`` (``[rows, source bins, frames]``) as ``bins`` mel bins, in the
    features' dtype and device."""
    source_bins = features.shape[1]
    if source_bins == bins:
        return features
    matrix = rebinning(source_bins, bins).to(features.device, torch.float32)
    energies = torch.pow(10.0, features.float() * 4.0 - 4.0)  # undo (log10 + 4) / 4
    log_mel = torch.log10(torch.einsum("ts,rsf->rtf", matrix, energies).clamp_min(LOG_FLOOR))
    loudest = log_mel.amax(dim=(1, 2), keepdim=True)
    log_mel = torch.maximum(log_mel, loudest - DYNAMIC_RANGE)
    return ((log_mel + 4.0) / 4.0).to(features.dtype)
