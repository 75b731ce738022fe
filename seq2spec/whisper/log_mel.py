"""Whisper's log-mel features of long files, computed block by block as the audio is read.

``WhisperFeatureExtractor`` computes a batch at once: for an hour of audio it holds the samples, the complex
spectrum of every frame and several copies of the features (about 2 GB). The features of one frame depend only on
the 400 samples around it, and the extractor's one step across a whole clip, the clamp to 8 below its loudest
value, comes last. So here the frames are computed a block at a time from the audio as it is read, and the
features come out bit for bit the extractor's (``padding="longest"``, ``truncation=False``, with its attention
mask): the same short-time transforms of the same samples, the same products, the same clamp. Memory holds the
features (80 or 128 floats per 10 ms: 115 or 184 MB an hour) and one block; features of long files are written to a
temporary file instead, whose pages go back to the system as they are written (``feature_file``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch

from seq2spec.whisper.feature_file import FeatureFile, worth_a_file

FRAMES_AT_ONCE = 3000  # 30 s of frames per short-time transform and product


def computes_like(extractor) -> bool:
    """Whether ``extractor`` is a Whisper extractor whose features ``BlockLogMel`` reproduces: no dither, no
    normalisation, zeros as padding (Whisper's own settings)."""
    from transformers import WhisperFeatureExtractor

    return (
        isinstance(extractor, WhisperFeatureExtractor)
        and not getattr(extractor, "dither", 0.0)
        and not getattr(extractor, "do_normalize", False)
        and float(getattr(extractor, "padding_value", 0.0)) == 0.0
    )


@dataclass
class _Row:
    """One clip while its frames are computed: log-mel values before the clamp (``done`` of them final), the
    samples read, and those the frames still to come need."""

    features: torch.Tensor
    done: int = 0
    read: int = 0
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))  # samples kept_from:read
    kept_from: int = 0
    head: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))  # the clip's first samples
    loudest: torch.Tensor | None = None  # the largest value computed
    release: Callable[[int], None] | None = None  # hands back the memory of the frames before a given one

    def held(self) -> _Row:
        """This row with its computed frames copied into memory of its own."""
        self.features = self.features.clone()
        return self

    def reserve(self, frames: int) -> None:
        """Room for ``frames`` (a clip longer than expected gets a tensor of its own)."""
        if frames > self.features.shape[1]:
            grown = torch.empty(self.features.shape[0], max(frames, self.features.shape[1] * 5 // 4 + 64))
            grown[:, : self.done] = self.features[:, : self.done]
            self.features = grown


class BlockLogMel:
    """``extractor(batch, padding="longest", truncation=False, return_attention_mask=True)`` for clips given as
    iterables of 16-kHz float32 sample blocks."""

    def __init__(self, extractor) -> None:
        self.n_fft = int(extractor.n_fft)
        self.hop = int(extractor.hop_length)
        self.half = self.n_fft // 2  # the extractor's centred frames reach this far either side
        self.window = torch.hann_window(self.n_fft)
        self.filters = torch.from_numpy(np.asarray(extractor.mel_filters)).to(torch.float32)

    def __call__(self, clips: Iterable[Iterable[np.ndarray]], expected: Iterable[int]) -> dict[str, Any]:
        """``{"input_features": [rows, mel bins, frames], "attention_mask": [rows, frames], "lengths": [rows]}``
        (``lengths``: each clip's samples), and ``"file"``: the ``FeatureFile`` the features are mapped from, or None.
        ``expected``: each clip's length as far as known; where they are right, the rows are computed in place in the
        batch's features (no copy of an hour's features), which long files keep in a file (``feature_file``)."""
        expected = [max(0, int(size)) for size in expected]
        shape = (len(expected), self.filters.shape[1], max(expected, default=0) // self.hop)
        store = FeatureFile(*shape) if worth_a_file(*shape) else None
        batch = store.tensor if store is not None else torch.empty(shape)
        rows = []
        try:
            for index, blocks in enumerate(clips):
                row = _Row(batch[index], release=partial(store.release, index) if store is not None else None)
                for block in blocks:
                    self._read(row, np.asarray(block, dtype=np.float32))
                rows.append(row)
        except BaseException:
            if store is not None:
                store.close()
            raise
        lengths = torch.tensor([row.read for row in rows])
        longest = int(lengths.max())
        frames = longest // self.hop
        in_place = frames == batch.shape[2] and all(row.features.data_ptr() == batch[i].data_ptr()
                                                      for i, row in enumerate(rows))  # fmt: skip
        if not in_place and store is not None:  # a header was wrong: the rows were written elsewhere in part
            for row in rows:
                row.release = None
            rows = [row if row.features.data_ptr() != batch[i].data_ptr() else row.held() for i, row in enumerate(rows)]
            store.close()
            store = None
        features = batch if in_place else torch.empty(len(rows), self.filters.shape[1], frames)
        for index, row in enumerate(rows):
            self._compute(row, frames, longest)
            if not in_place:
                features[index] = row.features[:, :frames]
                row.features = torch.empty(0)  # each row's own copy goes as soon as the batch holds it
            if row.release is None:
                clamp_like_whisper(features[index])
            else:  # a window at a time, with the loudest value of the row's frames as computed
                for start in range(0, frames, FRAMES_AT_ONCE):
                    clamp_like_whisper(features[index, :, start : start + FRAMES_AT_ONCE], loudest=row.loudest)
                    row.release(start + FRAMES_AT_ONCE)
        mask = (torch.arange(frames)[None, :] * self.hop < lengths[:, None]).to(torch.int32)
        return {"input_features": features, "attention_mask": mask, "lengths": lengths, "file": store}

    def _read(self, row: _Row, block: np.ndarray) -> None:
        if len(row.head) <= self.half:
            row.head = np.concatenate([row.head, block[: self.half + 1 - len(row.head)]])
        row.kept = np.concatenate([row.kept, block])
        row.read += len(block)
        ready = (row.read - self.half) // self.hop + 1  # frames whose samples all lie within what is read
        if len(row.head) > self.half and ready - row.done >= FRAMES_AT_ONCE:  # the clip's start is known too
            self._compute(row, row.done + (ready - row.done) // FRAMES_AT_ONCE * FRAMES_AT_ONCE, longest=None)

    def _compute(self, row: _Row, last: int, longest: int | None) -> None:
        """Frames ``row.done`` up to ``last``; ``longest`` (the batch's longest clip, which the clip is padded to
        with zeros and reflected at the end of) once every clip is read."""
        row.reserve(last)
        while row.done < last:
            count = min(FRAMES_AT_ONCE, last - row.done)
            first = row.done * self.hop - self.half
            segment = torch.from_numpy(self._padded(row, first, first + (count - 1) * self.hop + self.n_fft, longest))
            spectrum = torch.stft(segment, self.n_fft, self.hop, window=self.window, center=False,
                                  return_complex=True)  # fmt: skip
            power = (spectrum.abs() ** 2).contiguous()
            if count == 1:  # one column takes another product's path, rounded otherwise than the extractor's
                power = torch.cat([power, power], dim=1)
            mel = self.filters.T @ power
            values = torch.clamp(mel[:, :count], min=1e-10).log10()
            row.features[:, row.done : row.done + count] = values
            row.loudest = values.max() if row.loudest is None else torch.maximum(row.loudest, values.max())
            row.done += count
            if row.release is not None:
                row.release(row.done)
        start = max(0, row.done * self.hop - self.half)  # what the next frame reads first
        if start > row.kept_from:
            row.kept = row.kept[start - row.kept_from :].copy()
            row.kept_from = start

    def _padded(self, row: _Row, begin: int, end: int, longest: int | None) -> np.ndarray:
        """Positions ``begin:end`` of the clip as the extractor frames it: reflected before 0, zeros from its end
        to ``longest``, reflected after that."""
        positions = np.arange(begin, end)
        positions = np.abs(positions)
        if longest is not None:
            positions = np.where(positions >= longest, 2 * (longest - 1) - positions, positions)
        values = np.zeros(len(positions), dtype=np.float32)
        early = positions < row.kept_from
        values[early] = row.head[positions[early]]  # only the reflection before 0 reaches back this far
        present = ~early & (positions < row.read)
        values[present] = row.kept[positions[present] - row.kept_from]
        return values


def clamp_like_whisper(log_spec: torch.Tensor, loudest: torch.Tensor | None = None) -> None:
    """Whisper's last step, in place: values at most 8 below the clip's loudest (``loudest``: that of a clip this is
    a part of), then scaled."""
    torch.maximum(log_spec, (log_spec.max() if loudest is None else loudest) - 8.0, out=log_spec)
    log_spec.add_(4.0).div_(4.0)
