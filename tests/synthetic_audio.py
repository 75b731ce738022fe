"""Test audio: short signals that differ a lot from file to file."""

from __future__ import annotations

import numpy as np


def tone(seconds: float, rate: int, channels: int, seed: int) -> np.ndarray:
    """Signals that differ a lot from file to file: loud noise, quiet noise, low or high tones."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    kind = seed % 4
    if kind == 0:
        signal = 0.8 * rng.standard_normal(t.size)
    elif kind == 1:
        signal = 0.001 * rng.standard_normal(t.size)
    else:
        signal = 0.5 * np.sin(2 * np.pi * (120 if kind == 2 else min(3000, rate / 3)) * t)
    signal = np.clip(signal, -1, 1)
    return np.stack([signal * (1 - 0.3 * c) for c in range(channels)], axis=1) if channels > 1 else signal
