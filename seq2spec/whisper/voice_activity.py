"""Where a recording holds speech: Silero VAD's speech probability for every 32-ms frame, scored block by block so
that a long file never has to be held whole, then Silero's own rule turns the probabilities into stretches of
speech.

Silero's model scores one frame at a time: a short-time Fourier transform and a convolutional encoder, which see
only the frame and the 64 samples before it, then a recurrent cell carried from frame to frame. The scorer runs the
first two on thousands of frames at once and the cell as one LSTM over them, which gives the same probabilities
(within 1e-4) about six times faster than frame by frame; a Silero release without those parts is scored frame by
frame.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from seq2spec.whisper.audio import SAMPLING_RATE

FRAME_SAMPLES = 512  # Silero's frame at 16 kHz
CONTEXT_SAMPLES = 64  # samples of the frame before that each frame sees
FRAMES_AT_ONCE = 4096  # frames scored together (about 2 minutes of audio)
# how speech is told from the rest: Silero's threshold; a pause shorter than MIN_SILENCE_MS does not end a stretch
# of speech; each stretch keeps SPEECH_PAD_MS of what surrounds it; no stretch is longer than a Whisper window
THRESHOLD = 0.5
MIN_SILENCE_MS = 160
SPEECH_PAD_MS = 200
LONGEST_SPEECH_SECONDS = 30.0
# A recording whose loudest sample stays below QUIET_PEAK (about -46 dBFS) is scored at the gain that brings its peak to
# SCORED_PEAK (at most MAX_GAIN): Silero's probabilities fall with the level. On the sample file repeated three times
# (4.6 min; WER against the sequential transcript at full level), the batched long form scored 1.090 at a peak of
# 0.0008 (speech missed, noise transcribed) and 0.161 at 0.0025; scored at the gain, 0.181 and 0.133. At a peak of
# 0.008 the stretches found as it is served better (0.107) than those found at a gain to 0.1 (0.122), so a recording
# from QUIET_PEAK up is scored as it is.
QUIET_PEAK = 0.005
SCORED_PEAK = 0.1
MAX_GAIN = 1000.0


def detection_gain(peak: float) -> float:
    """The gain a recording whose largest absolute sample is ``peak`` is scored at: 1 unless it is quieter than
    ``QUIET_PEAK`` (and not silent)."""
    if not 0 < peak < QUIET_PEAK:
        return 1.0
    return min(MAX_GAIN, SCORED_PEAK / peak)


@lru_cache(maxsize=1)
def load_detector():
    """Silero VAD's model, loaded once (ImportError naming the extra without it). Importing Silero sets torch to one
    thread for the whole process: the count is put back, so the decoding keeps its own."""
    threads = torch.get_num_threads()
    try:
        from silero_vad import load_silero_vad

        return load_silero_vad()
    except ImportError:
        raise ImportError('long_form="batched" and vad need Silero VAD: pip install "seq2spec[whisper]"') from None
    finally:
        torch.set_num_threads(threads)


def _has_parts(detector) -> bool:
    network = getattr(detector, "_model", None)
    return all(hasattr(network, name) for name in ("stft", "encoder", "decoder")) and all(
        hasattr(network.decoder, name) for name in ("rnn", "decoder")
    )


class SpeechScorer:
    """Speech probabilities of the 32-ms frames of a 16-kHz stream fed in blocks of any length: ``feed`` returns
    those of the frames it completed, ``finish`` that of the last, zero-padded frame."""

    def __init__(self, detector=None, frames_at_once: int = FRAMES_AT_ONCE) -> None:
        self.detector = detector if detector is not None else load_detector()
        self.frames_at_once = frames_at_once
        self.batched = _has_parts(self.detector)
        self._pending = np.zeros(0, dtype=np.float32)
        self._context = torch.zeros(1, CONTEXT_SAMPLES)
        self._state: tuple[torch.Tensor, torch.Tensor] | None = None
        if self.batched:
            cell = self.detector._model.decoder.rnn
            self._lstm = torch.nn.LSTM(cell.weight_ih.shape[1], cell.weight_hh.shape[1])
            with torch.no_grad():
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    getattr(self._lstm, f"{name}_l0").copy_(getattr(cell, name))
        else:
            self.detector.reset_states()

    def feed(self, samples: np.ndarray) -> np.ndarray:
        samples = np.concatenate([self._pending, np.asarray(samples, dtype=np.float32)])
        whole = len(samples) - len(samples) % FRAME_SAMPLES
        self._pending = samples[whole:]
        return self._scored(samples[:whole])

    def finish(self) -> np.ndarray:
        if not len(self._pending):
            return np.zeros(0, dtype=np.float32)
        last = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        last[: len(self._pending)] = self._pending
        self._pending = np.zeros(0, dtype=np.float32)
        return self._scored(last)

    def _scored(self, samples: np.ndarray) -> np.ndarray:
        frames = torch.from_numpy(np.ascontiguousarray(samples)).view(-1, FRAME_SAMPLES)
        scores = []
        with torch.inference_mode():
            for start in range(0, len(frames), self.frames_at_once):
                block = frames[start : start + self.frames_at_once]
                scores.append(self._scored_frames(block) if self.batched else self._scored_one_by_one(block))
        return torch.cat(scores).numpy() if scores else np.zeros(0, dtype=np.float32)

    def _scored_frames(self, frames: torch.Tensor) -> torch.Tensor:
        contexts = torch.cat([self._context, frames[:-1, -CONTEXT_SAMPLES:]])
        self._context = frames[-1:, -CONTEXT_SAMPLES:].clone()
        network = self.detector._model
        encoded = network.encoder(network.stft(torch.cat([contexts, frames], dim=1)))  # [frames, 128, 1]
        hidden, self._state = self._lstm(encoded.squeeze(-1).unsqueeze(1), self._state)  # frames in sequence
        return network.decoder.decoder(hidden.squeeze(1).unsqueeze(-1)).squeeze(1).mean(dim=1)

    def _scored_one_by_one(self, frames: torch.Tensor) -> torch.Tensor:
        return torch.tensor([float(self.detector(frame.unsqueeze(0), SAMPLING_RATE)) for frame in frames])


def speech_probabilities(blocks: Iterable[np.ndarray], detector=None, gain: float = 1.0) -> tuple[np.ndarray, int]:
    """``(probability per frame, samples in all)`` of a 16-kHz stream given in blocks, scored at ``gain``."""
    scorer = SpeechScorer(detector)
    scores, total = [], 0
    for block in blocks:
        total += len(block)
        scores.append(scorer.feed(block * np.float32(gain) if gain != 1.0 else block))
    scores.append(scorer.finish())
    return np.concatenate(scores), total


@dataclass(frozen=True)
class Stretch:
    """Samples ``start:end`` of a recording, decoded as speech: where the detector heard it
    (``speech_start:speech_end``) and a margin around it, so that no soft sound at either end is cut off."""

    start: int
    end: int
    speech_start: int
    speech_end: int

    def __len__(self) -> int:
        return self.end - self.start


def with_margins(spans: list[tuple[int, int]], margin: int, total: int) -> list[Stretch]:
    """Speech ``spans`` widened by ``margin`` samples on each side, within ``0:total``; two closer than two margins
    share the pause between them at its middle (Silero's rule)."""
    stretches = []
    for index, (start, end) in enumerate(spans):
        before = spans[index - 1][1] if index else None
        after = spans[index + 1][0] if index + 1 < len(spans) else None
        alone_before = before is None or start - before >= 2 * margin
        alone_after = after is None or after - end >= 2 * margin
        low = max(0, start - margin) if alone_before else start - (start - before) // 2
        high = min(total, end + margin) if alone_after else end + (after - end) // 2
        stretches.append(Stretch(low, high, start, end))
    return stretches


def speech_spans(blocks: Iterable[np.ndarray] | np.ndarray, gain: float = 1.0) -> list[Stretch]:
    """The stretches of speech in a 16-kHz recording (an array, or its blocks in order) scored at ``gain``
    (``detection_gain``): none for silence or noise, each with ``SPEECH_PAD_MS`` of margin and at most
    ``LONGEST_SPEECH_SECONDS`` long, in order, never overlapping."""
    detector = load_detector()  # first: without Silero it says what to install
    from silero_vad import get_speech_timestamps_from_probs

    probabilities, total = speech_probabilities([blocks] if isinstance(blocks, np.ndarray) else blocks, detector, gain)
    margin = SPEECH_PAD_MS * SAMPLING_RATE // 1000
    found = get_speech_timestamps_from_probs(
        probabilities.tolist(),
        sampling_rate=SAMPLING_RATE,
        threshold=THRESHOLD,
        min_silence_duration_ms=MIN_SILENCE_MS,
        speech_pad_ms=0,  # the margins are added here, and kept apart from the speech
        max_speech_duration_s=LONGEST_SPEECH_SECONDS - 2 * margin / SAMPLING_RATE,
        audio_length_samples=total,
    )
    spans = [(max(0, span["start"]), min(total, span["end"])) for span in found]
    return with_margins(spans, margin, total)
