"""What every audio reader shares: Whisper's sampling rate and the error that names an input it cannot use."""

from __future__ import annotations

SAMPLING_RATE = 16_000


class AudioError(ValueError):
    """An input that cannot be used as audio; the message names the file and the reason."""


class AudioReadError(AudioError):
    """A file its reader failed on, not a problem of the samples it holds: another reader may still decode it.
    ``reason`` is what the reader said."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
