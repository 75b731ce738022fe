"""Batched long form: Silero VAD finds each clip's stretches of speech (``voice_activity``), consecutive stretches are
joined into pieces of at most 30 s with the longer pauses between them left out, and the pieces of every clip are
decoded together as short clips, a batch at a time; each clip's text, segments and words are then put back
together in the clip's own time. Each piece's result is the model's own output for that piece; what is not speech
(silence, noise) is never decoded, so it gives no words. A file is read stretch by stretch: memory follows the
batch, not the file."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import numpy as np

from seq2spec.whisper.audio import SAMPLING_RATE, AudioFile
from seq2spec.whisper.audio_types import AudioReadError
from seq2spec.whisper.voice_activity import SPEECH_PAD_MS, Stretch, detection_gain, load_detector, speech_spans

__all__ = ["PIECE_SAMPLES", "Piece", "load_detector", "pack_stretches", "speech_pieces"]

PIECE_SAMPLES = 30 * SAMPLING_RATE  # Whisper's window
# with timestamps asked for, a longer pause ends a piece: Whisper may write one segment over the speech on both sides
# of a pause it never heard, and such a segment should not run across a long silence (text alone packs tighter)
LONGEST_JOINED_PAUSE = 3 * SAMPLING_RATE
Clip = np.ndarray | AudioFile
READ_ACROSS = 10 * SAMPLING_RATE  # a file's stretches closer than this are read as one region
# Whisper drops the first word of speech that starts at a clip's first sample (whisper-base on the sample clips read
# one after another with no pause: "morning train to the coast ..." without the "The" it writes after 0.2 s of
# silence); a piece of speech from a recording's first sample is decoded after silence that makes up its margin
LEAD_IN = SPEECH_PAD_MS * SAMPLING_RATE // 1000
# decode(pieces' samples) -> one result per piece, in order
DecodeFn = Callable[[list[np.ndarray]], list[Any]]


@dataclass(frozen=True)
class Piece:
    """Stretches ``stretches`` (in order) of clip ``clip``, decoded as one clip made of them one after another,
    after ``lead_in`` samples of silence."""

    clip: int
    stretches: tuple[Stretch, ...]
    lead_in: int = 0

    def __len__(self) -> int:
        """Samples of the clip in the piece (its lead-in aside)."""
        return sum(len(stretch) for stretch in self.stretches)

    @classmethod
    def of(cls, clip: int, stretches: tuple[Stretch, ...], limit: int | None = PIECE_SAMPLES) -> Piece:
        """The piece of ``stretches``, with silence before them where the first starts at the recording's first
        sample with less than ``LEAD_IN`` of it before its speech, as far as the piece leaves room within ``limit``
        samples (None: no limit)."""
        lead_in = 0
        if stretches and stretches[0].start == 0:
            lead_in = max(0, LEAD_IN - stretches[0].speech_start)
            if limit is not None:
                lead_in = min(lead_in, max(0, limit - sum(len(stretch) for stretch in stretches)))
        return cls(clip, stretches, lead_in)

    def samples(self, clip: Clip) -> np.ndarray:
        """The piece's audio: its lead-in, then its stretches of ``clip`` one after another (from a file, stretches
        close together are read in one go)."""
        silence = [np.zeros(self.lead_in, dtype=np.float32)] if self.lead_in else []
        if isinstance(clip, np.ndarray):
            spoken = [clip[s.start : s.end] for s in self.stretches]
            return np.concatenate([*silence, *spoken]).astype(np.float32, copy=False)
        parts: list[np.ndarray] = list(silence)
        run: list[Stretch] = []
        for stretch in (*self.stretches, None):
            if run and (stretch is None or stretch.start - run[-1].end > READ_ACROSS):
                region = clip.read(run[0].start, run[-1].end)
                parts += [region[s.start - run[0].start : s.end - run[0].start] for s in run]
                run = []
            if stretch is not None:
                run.append(stretch)
        return np.concatenate(parts)

    def _stretch_at(self, seconds: float, is_end: bool) -> tuple[int, float]:
        offsets = list(accumulate((len(stretch) for stretch in self.stretches), initial=0))
        at = min(max(seconds * SAMPLING_RATE - self.lead_in, 0.0), offsets[-1])
        index = (bisect_left(offsets, at) if is_end else bisect_right(offsets, at)) - 1
        index = min(max(index, 0), len(self.stretches) - 1)
        return index, self.stretches[index].start + at - offsets[index]

    def clip_time(self, seconds: float, is_end: bool = False) -> float:
        """The clip's time of a time in the piece, within the speech of its stretch: a time in a stretch's margin
        (or in the lead-in) moves to where the detector heard speech begin or end; an end that falls where two
        stretches meet belongs to the first, a start to the second; times past the piece's end belong to its last
        stretch."""
        index, sample = self._stretch_at(seconds, is_end)
        stretch = self.stretches[index]
        return min(max(sample, stretch.speech_start), stretch.speech_end) / SAMPLING_RATE

    def word_end(self, start: float, end: float) -> float:
        """The clip's time of a word's end: a word ends in the stretch it starts in (Whisper's alignment ends a
        word where the next begins, which may lie past a pause left out of the piece)."""
        first, _ = self._stretch_at(start, is_end=False)
        if self._stretch_at(end, is_end=True)[0] > first:
            return self.stretches[first].speech_end / SAMPLING_RATE
        return self.clip_time(end, is_end=True)


def pack_stretches(
    stretches: list[Stretch], limit: int = PIECE_SAMPLES, longest_pause: int | None = None
) -> list[tuple[Stretch, ...]]:
    """Consecutive ``stretches`` joined, in order, into groups holding at most ``limit`` samples of them, a pause
    longer than ``longest_pause`` samples (if given) ending a group; none is split (one longer than ``limit`` is cut
    into parts that fit)."""
    groups: list[list[Stretch]] = []
    held = limit  # samples in the last group
    for stretch in stretches:
        if groups and longest_pause is not None and stretch.speech_start - groups[-1][-1].speech_end > longest_pause:
            held = limit
        for start in range(stretch.start, stretch.end, limit):
            end = min(stretch.end, start + limit)
            part = Stretch(start, end, min(max(stretch.speech_start, start), end),
                           max(min(stretch.speech_end, end), start))  # fmt: skip
            if held + len(part) > limit:
                groups.append([])
                held = 0
            groups[-1].append(part)
            held += len(part)
    return [tuple(group) for group in groups]


def blocks_of(clip: Clip) -> Iterator[np.ndarray] | np.ndarray:
    return clip if isinstance(clip, np.ndarray) else clip.blocks()


def clip_speech(clip: Clip) -> list[Stretch]:
    """The stretches of speech in ``clip``, a quiet recording scored louder (``detection_gain`` of its peak, found in a
    first pass over a file). A file is scanned once; ``AudioError`` naming it when it cannot be read to its end."""
    if isinstance(clip, np.ndarray):
        return _speech(clip)
    if clip.speech is None:  # the file's own record of them: transcribe_records scans a file first, then decoding
        try:
            clip.speech = tuple(_speech(clip))
        except AudioReadError as failure:  # soundfile failed part-way: PyAV decodes what it can
            clip.read_through_pyav(failure)
            clip.speech = tuple(_speech(clip))
    return list(clip.speech)


def _speech(clip: Clip) -> list[Stretch]:
    blocks = [clip] if isinstance(clip, np.ndarray) else clip.blocks()
    peak = max((float(np.abs(block).max()) for block in blocks if len(block)), default=0.0)
    return speech_spans(blocks_of(clip), gain=detection_gain(peak))


def speech_pieces(clip: Clip, index: int = 0, timed: bool = False) -> list[Piece]:
    """The pieces of ``clip``'s speech, in order; ``timed`` (timestamps asked for): a long pause ends a piece."""
    longest_pause = LONGEST_JOINED_PAUSE if timed else None
    return [Piece.of(index, group) for group in pack_stretches(clip_speech(clip), longest_pause=longest_pause)]


def _in_clip_time(items: list[dict[str, Any]], piece: Piece, words: bool) -> list[dict[str, Any]]:
    placed = []
    for item in items:
        item = dict(item)
        start, end = item.get("start"), item.get("end")
        if start is not None:
            item["start"] = round(piece.clip_time(start), 2)
        if end is not None:
            item["end"] = round(piece.word_end(start, end) if words and start is not None
                                else piece.clip_time(end, is_end=True), 2)  # fmt: skip
        placed.append(item)
    return placed


def joined(results: list[Any], pieces: list[Piece], keys: tuple[str, ...] | None) -> Any:
    """One clip's result from its pieces' results (in order): the text, or with ``keys`` (``"segments"``,
    ``"words"``) a dict holding them in the clip's time."""
    texts = [(result["text"] if isinstance(result, dict) else result).strip() for result in results]
    text = " ".join(text for text in texts if text)
    if keys is None:
        return text
    whole: dict[str, Any] = {"text": text}
    for key in keys:
        whole[key] = [
            item
            for result, piece in zip(results, pieces, strict=True)
            for item in _in_clip_time(result[key], piece, words=key == "words")
        ]
    return whole


def transcribe_in_pieces(
    clips: list[Clip],
    decode: DecodeFn,
    keys: tuple[str, ...] | None,
    batch_size: int,
    report: Callable[[float], None] = lambda seconds: None,
) -> list[Any]:
    """Each clip's result (see ``joined``) from ``decode`` of the speech pieces of all clips, longest first,
    ``batch_size`` at a time (only those pieces' samples are held). ``report`` is called with the seconds of audio
    each batch covers, and with those of the rest (left out as not speech) at the end."""
    pieces = [piece for index, clip in enumerate(clips) for piece in speech_pieces(clip, index, timed=bool(keys))]
    order = sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))
    results: list[Any] = [None] * len(pieces)
    for start in range(0, len(order), batch_size):
        chosen = order[start : start + batch_size]
        decoded = decode([pieces[i].samples(clips[pieces[i].clip]) for i in chosen])
        for i, result in zip(chosen, decoded, strict=True):
            results[i] = result
        report(sum(len(pieces[i]) for i in chosen) / SAMPLING_RATE)
    report((sum(len(clip) for clip in clips) - sum(len(piece) for piece in pieces)) / SAMPLING_RATE)
    by_clip: list[list[int]] = [[] for _ in clips]
    for i, piece in enumerate(pieces):
        by_clip[piece.clip].append(i)
    return [joined([results[i] for i in found], [pieces[i] for i in found], keys) for found in by_clip]


def transcribe_speech_only(
    clips: list[Clip],
    decode: DecodeFn,
    keys: tuple[str, ...] | None,
    report: Callable[[float], None] = lambda seconds: None,
) -> list[Any]:
    """Each clip's result (see ``joined``) from ``decode`` of its speech alone: all its stretches one after another,
    what lies between them left out, decoded as one recording (``decode`` reports its own progress). ``report`` is
    called with the seconds left out, at the end."""
    pieces = [Piece.of(index, tuple(clip_speech(clip)), limit=None) for index, clip in enumerate(clips)]
    spoken = [piece for piece in pieces if piece.stretches]
    decoded = iter(decode([piece.samples(clips[piece.clip]) for piece in spoken]) if spoken else [])
    report((sum(len(clip) for clip in clips) - sum(len(piece) for piece in pieces)) / SAMPLING_RATE)
    return [joined([next(decoded)], [piece], keys) if piece.stretches else joined([], [], keys) for piece in pieces]
