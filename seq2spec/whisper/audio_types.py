"""What every audio reader shares: Whisper's sampling rate and the error that names an input it cannot use."""

from __future__ import annotations

SAMPLING_RATE = 16_000


class AudioError(ValueError):
    """An input that cannot be used as audio; the message names the file and the reason."""
