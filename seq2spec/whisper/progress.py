"""A progress bar counted in seconds of audio, for ``seq2spec transcribe`` and ``transcribe(..., progress=True)``."""

from __future__ import annotations


class AudioProgress:
    """Seconds of audio done on a tqdm bar, to one decimal and never past the bar's total (the windows' and files'
    durations, each rounded, need not add up to the rounded total)."""

    def __init__(self, bar) -> None:
        self.bar = bar
        self.seconds = 0.0

    def add(self, seconds: float) -> None:
        self.move_to(self.seconds + seconds)

    def move_to(self, seconds: float) -> None:
        self.seconds = seconds
        shown = min(round(seconds, 1), self.bar.total)
        if shown > self.bar.n:
            self.bar.n = shown
            self.bar.refresh()
