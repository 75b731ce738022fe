"""Batched long form: Silero VAD finds each clip's speech, the speech is cut at pauses into pieces of at most 30 s,
and the pieces of every clip are decoded together as short clips; each clip's text, segments and words are then put
back together in the clip's own time. Each piece's result is the model's own output for that piece; what is not
speech (silence, noise) is never decoded, so it gives no words."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from seq2spec.whisper.audio import SAMPLING_RATE

LONG_FORMS = ("sequential", "batched")
PIECE_SAMPLES = 30 * SAMPLING_RATE  # Whisper's window
# a stretch of speech longer than this is split by the detector (at its longest pause if it has one); its padding
# on both sides still fits the window
LONGEST_SPEECH_SECONDS = 29.0


@dataclass(frozen=True)
class Piece:
    """Samples ``start:end`` of clip ``clip``."""

    clip: int
    start: int
    end: int


@lru_cache(maxsize=1)
def load_detector():
    """Silero VAD's model, loaded once (ImportError naming the extra without it). Importing Silero sets torch to one
    thread for the whole process: the count is put back, so the decoding keeps its own."""
    import torch  # here: the commands import this module for LONG_FORMS, and their --help stays light

    threads = torch.get_num_threads()
    try:
        from silero_vad import load_silero_vad

        return load_silero_vad()
    except ImportError:
        raise ImportError('long_form="batched" needs Silero VAD: pip install "seq2spec[whisper]"') from None
    finally:
        torch.set_num_threads(threads)


def speech_spans(samples: np.ndarray) -> list[tuple[int, int]]:
    """``(start, end)`` samples of each stretch of speech in 16-kHz ``samples`` (none for silence or noise), each
    shorter than ``LONGEST_SPEECH_SECONDS`` plus Silero's padding."""
    import torch

    detector = load_detector()  # first: without Silero it says what to install
    from silero_vad import get_speech_timestamps

    with torch.inference_mode():
        found = get_speech_timestamps(
            torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)),
            detector,
            sampling_rate=SAMPLING_RATE,
            max_speech_duration_s=LONGEST_SPEECH_SECONDS,
        )
    return [(max(0, span["start"]), min(len(samples), span["end"])) for span in found]


def cut_pieces(spans: list[tuple[int, int]], limit: int = PIECE_SAMPLES) -> list[tuple[int, int]]:
    """Consecutive ``spans`` joined into pieces of at most ``limit`` samples, each cut in a pause: a piece runs from
    its first span's start to its last span's end, and no span is split."""
    pieces: list[tuple[int, int]] = []
    for start, end in spans:
        if pieces and end - pieces[-1][0] <= limit:
            pieces[-1] = (pieces[-1][0], end)
        else:
            pieces.append((start, end))
    return pieces


def _shifted(items: list[dict[str, Any]], seconds: float) -> list[dict[str, Any]]:
    return [
        {key: round(value + seconds, 2) if key in ("start", "end") and value is not None else value
         for key, value in item.items()}
        for item in items
    ]  # fmt: skip


def joined(results: list[Any], starts: list[float], keys: tuple[str, ...] | None) -> Any:
    """One clip's result from its pieces' results (in order) and their start times in seconds: the text, or with
    ``keys`` (``"segments"``, ``"words"``) a dict holding them in the clip's time."""
    texts = [(result["text"] if isinstance(result, dict) else result).strip() for result in results]
    text = " ".join(text for text in texts if text)
    if keys is None:
        return text
    whole: dict[str, Any] = {"text": text}
    for key in keys:
        whole[key] = [
            item for result, start in zip(results, starts, strict=True) for item in _shifted(result[key], start)
        ]
    return whole


def transcribe_in_pieces(
    clips: list[np.ndarray], decode: Callable[[list[np.ndarray]], list[Any]], keys: tuple[str, ...] | None
) -> list[Any]:
    """Each clip's result (see ``joined``) from ``decode`` of the speech pieces of all clips together."""
    pieces = [Piece(index, *cut) for index, clip in enumerate(clips) for cut in cut_pieces(speech_spans(clip))]
    results = decode([clips[piece.clip][piece.start : piece.end] for piece in pieces]) if pieces else []
    by_clip: list[list[tuple[Piece, Any]]] = [[] for _ in clips]
    for piece, result in zip(pieces, results, strict=True):
        by_clip[piece.clip].append((piece, result))
    return [
        joined([result for _, result in found], [piece.start / SAMPLING_RATE for piece, _ in found], keys)
        for found in by_clip
    ]
