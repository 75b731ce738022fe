"""Reading audio for transcription: any format soundfile reads, and through PyAV the containers it cannot (``.m4a``,
``.mp4``, ``.webm``: ``containers``), mixed down to mono, resampled to 16 kHz (soxr). A file soundfile fails on (an
unfinished WAV header, a cut-off FLAC, an m4a named .mp3) is decoded by PyAV as far as it goes, with a warning."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from seq2spec.whisper.audio_types import SAMPLING_RATE, AudioError, AudioReadError
from seq2spec.whisper.containers import (
    CONTAINER_EXTENSIONS,
    container_seconds,
    is_container,
    pyav_installed,
    transcoded,
)

if TYPE_CHECKING:
    import soundfile

logger = logging.getLogger(__name__)

_EXTRA_EXTENSIONS = {".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aiff", ".aif", ".au", ".caf", ".w64"}


def audio_extensions() -> set[str]:
    """File extensions treated as audio: those of every format soundfile reads, common aliases, and the containers
    read through PyAV (a file of one of them without PyAV installed gets an error saying so)."""
    try:
        import soundfile

        formats = {f".{name.lower()}" for name in soundfile.available_formats()}
    except ImportError:
        formats = set()
    return formats | _EXTRA_EXTENSIONS | CONTAINER_EXTENSIONS


def find_audio(inputs: Iterable[str | Path]) -> list[Path]:
    """Audio files among ``inputs`` (files are taken as given, folders searched recursively), sorted, unique: a file
    named twice (relative and absolute, through a symbolic link) is kept once, under the first name."""
    extensions = audio_extensions()
    found: dict[str, Path] = {}  # the file's real path -> the name it was first found under
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                # a link that leads nowhere is listed too: reading it gives the file an error record
                if (candidate.is_file() or _leads_nowhere(candidate)) and candidate.suffix.lower() in extensions:
                    found.setdefault(os.path.realpath(candidate), candidate)
        elif path.exists():
            found.setdefault(os.path.realpath(path), path)
        elif path.is_symlink():
            raise FileNotFoundError(
                f"{path} is a symbolic link that leads nowhere (its target is missing, or the link points back to "
                "itself): fix the link or leave it out"
            )
        else:
            raise FileNotFoundError(f"no such file or folder: {path}")
    return list(found.values())


def _leads_nowhere(path: Path) -> bool:
    return path.is_symlink() and not path.exists()


# float samples beyond this are not audio scaled to [-1, 1] (integer-scale samples given as floats, most likely)
FLOAT_SAMPLE_LIMIT = 2.0
# files that store samples as floats: nothing holds them within full scale (an editor's export of amplified audio,
# samples written at integer scale), so such a file past +-1 is scaled back by its peak (``full_scale_gain``)
FLOAT_SUBTYPES = frozenset({"FLOAT", "DOUBLE"})


def as_float_samples(samples: np.ndarray) -> np.ndarray:
    """Float32 samples in [-1, 1]: integer arrays scaled by their type (int16 by 32768, uint8 around 128, ...)."""
    samples = np.asarray(samples)
    if samples.dtype.kind in "iu":
        info = np.iinfo(samples.dtype)
        middle = (int(info.max) + int(info.min) + 1) / 2  # 0 for signed types, 128 for uint8
        return ((samples.astype(np.float64) - middle) / (int(info.max) + 1 - middle)).astype(np.float32)
    if samples.dtype.kind != "f":
        raise AudioError(f"audio samples must be numbers, got an array of {samples.dtype}")
    samples = samples.astype(np.float32, copy=False)
    if not np.isfinite(samples).all():
        raise AudioError("the audio holds NaN or infinite samples")
    peak = float(np.abs(samples).max(initial=0.0))
    if peak > FLOAT_SAMPLE_LIMIT:
        raise AudioError(
            f"float audio samples must lie in [-1, 1], these reach {peak:g}: pass integer samples as their integer "
            "type (they are scaled by it), or divide by the scale (32768 for 16-bit)"
        )
    return samples


def full_scale_gain(peak: float) -> float:
    """The factor a float file's samples are scaled by: ``1 / peak`` when its peak is past full scale (+-1), else 1.
    Measured with whisper-base on three sample clips at 3x to 32,768x full scale: scaled back by the peak, each reads
    as at its own level; clipped (as a conversion to 16-bit integers does) or left as they are, the words go wrong
    from 3x and 10x on."""
    return 1.0 / peak if np.isfinite(peak) and peak > 1.0 else 1.0


# the mix of a file's channels is this much quieter than the channels themselves (-20 dB): they cancel each other
CANCELLING_MIX = 0.01


def mix_down(samples: np.ndarray, name: str = "the audio") -> np.ndarray:
    """Channels (``[frames, channels]`` float32) averaged into one; where they cancel each other (one channel the
    other's inverse, as a miswired stereo recording is), the mix would be near silence: the loudest channel alone is
    taken instead, with a warning."""
    mono = samples.mean(axis=1, dtype=np.float32)
    if samples.shape[1] < 2 or not len(samples):
        return mono
    channels = np.square(samples, dtype=np.float64).mean(axis=0)
    if channels.max() > 1e-10 and float(np.square(mono, dtype=np.float64).mean()) < CANCELLING_MIX * channels.mean():
        loudest = int(channels.argmax())
        logger.warning(
            "%s: its channels cancel each other when mixed (phase-inverted stereo?): channel %d alone is transcribed",
            name,
            loudest + 1,
        )
        return np.ascontiguousarray(samples[:, loudest])
    return mono


def to_mono_16k(samples: np.ndarray, sampling_rate: int, name: str = "the audio") -> np.ndarray:
    """Float32 mono at 16 kHz: integers scaled by their type, channels averaged (``[frames, channels]``),
    resampled with soxr's high quality. Floats far outside [-1, 1] and channels-first arrays are refused."""
    samples = as_float_samples(samples)
    if samples.ndim == 2:
        if samples.shape[0] < samples.shape[1]:
            raise AudioError(
                f"audio of shape {tuple(samples.shape)} has fewer frames than channels: arrays are [frames, channels] "
                "(transpose a channels-first array)"
            )
        samples = mix_down(samples, name)
    elif samples.ndim != 1:
        raise AudioError(f"audio must be [frames] or [frames, channels], got shape {samples.shape}")
    if sampling_rate != SAMPLING_RATE:
        import soxr

        samples = soxr.resample(samples, sampling_rate, SAMPLING_RATE, quality="HQ").astype(np.float32)
    return samples


@contextlib.contextmanager
def sound_file(source: Path) -> Iterator[soundfile.SoundFile]:
    """soundfile's reader of ``source``, which libsndfile reads by its descriptor. Opened by Python: a name that is not
    valid UTF-8 works and a missing file raises ``FileNotFoundError``. Never handed the file object: soundfile would
    read it through Python callbacks, where cffi prints and swallows a Ctrl-C and the read comes back short."""
    import soundfile

    with open(source, "rb") as handle:
        opened = handle.fileno() if os.name == "posix" else str(source)  # Windows: by wide-character name
        with soundfile.SoundFile(opened, closefd=False) as reader:
            yield reader


def reader_reason(error: Exception) -> str:
    """What a reader's exception says, without libsndfile's "Error opening <handle>: " (or a descriptor's number, or
    a name) and "Error : " lead-ins (the file is named by the caller)."""
    reason = str(error).strip()
    reason = re.sub(r"^Error opening (?:<[^>]*>|\d+|'[^']*'):\s*", "", reason)  # a file object, descriptor or name
    reason = re.sub(r"^Error\s*:\s*", "", reason)
    return reason.rstrip(".") or type(error).__name__


def load_audio(path: str | Path) -> np.ndarray:
    """The file's samples as float32 mono 16 kHz; ``AudioError`` naming the file when it is unusable. A file soundfile
    cannot read gets a second chance through PyAV (``read_through_pyav``)."""
    path = Path(path)
    if is_container(path):
        return _load_copy(path, transcoded(path))
    try:
        return _load(path, path)
    except AudioReadError as failure:
        return _load_copy(path, read_through_pyav(path, failure))


def _load_copy(path: Path, copy: Path) -> np.ndarray:
    try:
        return _load(path, copy)
    finally:
        os.remove(copy)


def _load(path: Path, source: Path) -> np.ndarray:

    try:
        # opened here: a file name that is not valid UTF-8 still works
        with sound_file(source) as reader:
            samples, sampling_rate = reader.read(dtype="float32", always_2d=True), reader.samplerate
            stored_as_floats = reader.subtype in FLOAT_SUBTYPES
    except Exception as error:  # noqa: BLE001 - every reader failure becomes a record, not a crash
        raise AudioReadError(*_unreadable(path, error)) from error
    if samples.shape[0] == 0:  # or a header never finished: see read_through_pyav
        raise AudioReadError(f"{path}: contains no audio samples", "no samples by its header")
    if stored_as_floats:
        samples *= full_scale_gain(float(np.abs(samples).max()))
    try:
        return to_mono_16k(samples, sampling_rate, str(path))
    except AudioError as error:
        raise AudioError(f"{path}: {error}") from None


def _unreadable(path: Path, error: Exception) -> tuple[str, str]:
    """The message naming ``path`` and the reason for a reader's ``error``."""
    if isinstance(error, FileNotFoundError):
        reason = "no such file: removed, or a symbolic link that leads nowhere"
        return f"{path}: {reason}", reason
    reason = reader_reason(error)
    return f"{path}: cannot be read as audio ({reason})", reason


def read_through_pyav(path: Path, failure: AudioError) -> Path:
    """PyAV's decoding of ``path`` into a temporary WAV file (the caller removes it) after soundfile failed on it with
    ``failure``: a WAV whose header was never finished (a recording cut off: no samples by its header), a FLAC cut
    off in a copy, an m4a named .mp3. FFmpeg decodes what it can of such files; ``failure`` is raised when PyAV is
    not installed or cannot decode the file either."""
    if not pyav_installed():
        raise failure
    try:
        copy = transcoded(path)
    except AudioError:
        raise failure from None
    reason = failure.reason if isinstance(failure, AudioReadError) else str(failure)
    logger.warning("%s: soundfile cannot read it (%s); read through PyAV instead: %.1f s", path, reason, _seconds(copy))
    return copy


def _seconds(path: Path) -> float:
    with sound_file(path) as reader:
        return reader.frames / reader.samplerate


def duration_seconds(path: str | Path) -> float:
    """Length from the header (0.0 when unreadable: such files sort first and fail when loaded)."""
    if is_container(path):
        return container_seconds(path)
    try:
        with sound_file(Path(path)) as reader:
            return reader.frames / reader.samplerate if reader.samplerate else 0.0
    except Exception:  # noqa: BLE001
        return 0.0


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


class AudioFile:
    """A file read only where it is needed: in blocks from start to end (``blocks``) or one stretch of it
    (``read``), as float32 mono 16 kHz, so a long recording is never held whole. The header is read at once:
    ``AudioError`` naming the file when it cannot be read or holds no samples. A container read through PyAV is
    decoded first into a temporary WAV file (``containers``), removed with the ``AudioFile``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.source = self.path  # the file read: a container's decoded copy, or PyAV's of a file soundfile fails on
        self.speech: tuple | None = None  # its stretches of speech, once found (seq2spec.whisper.speech.clip_speech)
        if is_container(self.path):
            self._read_copy(transcoded(self.path))
            return
        try:
            self._read_header()
        except AudioReadError as failure:
            self._read_copy(read_through_pyav(self.path, failure))

    def _read_header(self) -> None:
        self.measured: int | None = None  # 16-kHz samples counted by reading the file through (read_through)
        try:
            with sound_file(self.source) as reader:
                frames, sampling_rate, subtype = reader.frames, reader.samplerate, reader.subtype
        except Exception as error:  # noqa: BLE001 - every reader failure names the file
            raise self._error(error) from error
        if frames <= 0 or sampling_rate <= 0:
            raise AudioReadError(f"{self.path}: contains no audio samples", "no samples by its header")
        self.sampling_rate = int(sampling_rate)
        self.frames = int(frames)
        self.gain = self._peak_gain() if subtype in FLOAT_SUBTYPES else 1.0

    def _peak_gain(self, frames_at_once: int = 2**20) -> float:
        """``full_scale_gain`` of the file's peak, found by reading it through once (files of floats only)."""

        peak = 0.0
        try:
            with sound_file(self.source) as reader:
                for block in reader.blocks(frames_at_once, dtype="float32"):
                    peak = max(peak, float(np.abs(block).max(initial=0.0)))
        except Exception as error:  # noqa: BLE001
            raise self._error(error) from error
        return full_scale_gain(peak)

    def _read_copy(self, copy: Path) -> None:
        self.source = copy
        weakref.finalize(self, _remove, copy)
        self._read_header()

    def read_through_pyav(self, failure: AudioReadError) -> None:
        """Read the file from PyAV's decoding of it from now on, after soundfile failed part-way through it with
        ``failure`` (raised again when PyAV is missing, cannot decode it either, or is what failed)."""
        if self.source != self.path:
            raise failure
        self._read_copy(read_through_pyav(self.path, failure))

    def __len__(self) -> int:
        """Samples at 16 kHz: as read (``read_through``), or as its header tells."""
        if self.measured is not None:
            return self.measured
        return round(self.frames * SAMPLING_RATE / self.sampling_rate)

    def _error(self, error: Exception) -> AudioReadError:
        return AudioReadError(*_unreadable(self.path, error))

    def _mono(self, samples: np.ndarray) -> np.ndarray:
        if self.gain != 1.0:
            samples = samples * np.float32(self.gain)
        try:
            return mix_down(as_float_samples(samples), str(self.path))
        except AudioError as error:
            raise AudioError(f"{self.path}: {error}") from None

    def blocks(self, seconds: float = 60.0) -> Iterator[np.ndarray]:
        """The whole file, ``seconds`` at a time (the resampler's delay makes the first and last a little
        shorter)."""
        import soxr

        resampler = None
        if self.sampling_rate != SAMPLING_RATE:
            resampler = soxr.ResampleStream(self.sampling_rate, SAMPLING_RATE, 1, dtype="float32", quality="HQ")
        try:
            with sound_file(self.source) as reader:
                while True:
                    samples = reader.read(max(1, round(seconds * self.sampling_rate)), "float32", always_2d=True)
                    last = len(samples) == 0
                    mono = self._mono(samples) if len(samples) else np.zeros(0, dtype=np.float32)
                    if resampler is not None:
                        mono = resampler.resample_chunk(mono, last=last)
                    if len(mono):
                        yield mono
                    if last:
                        return
        except AudioError:
            raise
        except Exception as error:  # noqa: BLE001
            raise self._error(error) from error

    def read(self, start: int, end: int) -> np.ndarray:
        """Samples ``start:end`` (16 kHz positions) of the file, zeros past its end."""
        import math

        scale = self.sampling_rate / SAMPLING_RATE
        margin = 0 if scale == 1 else 256  # the resampler's filter sees past both ends
        step = self.sampling_rate // math.gcd(self.sampling_rate, SAMPLING_RATE)  # frames on the 16-kHz grid
        first = max(0, (int(start * scale) - margin) // step * step)
        try:
            with sound_file(self.source) as reader:
                reader.seek(min(first, self.frames))
                samples = reader.read(int(np.ceil(end * scale)) + margin - first, "float32", always_2d=True)
        except Exception as error:  # noqa: BLE001
            raise self._error(error) from error
        mono = self._mono(samples) if len(samples) else np.zeros(0, dtype=np.float32)
        if scale != 1:
            import soxr

            mono = soxr.resample(mono, self.sampling_rate, SAMPLING_RATE, quality="HQ").astype(np.float32)
        offset = start - first * SAMPLING_RATE // self.sampling_rate
        stretch = mono[offset : offset + end - start]
        return np.pad(stretch, (0, end - start - len(stretch)))

    def whole(self) -> np.ndarray:
        return load_audio(self.source)

    def read_through(self) -> int:
        """Read the file to its end once, a block at a time (PyAV where soundfile fails part-way), and return its
        exact length in 16-kHz samples (a header's count can be a few samples off): ``AudioReadError`` now, not
        part-way through decoding, for a file that cannot be read."""
        try:
            self.measured = sum(len(block) for block in self.blocks(seconds=20.0))
        except AudioReadError as failure:
            self.read_through_pyav(failure)
            self.measured = sum(len(block) for block in self.blocks(seconds=20.0))
        return self.measured

    def samples(self) -> np.ndarray:
        """The whole file as float32 mono 16 kHz, read block by block into one array: the same samples as
        ``load_audio``'s, without ever holding the file at its own rate and channels (an hour of 48-kHz stereo is
        1.4 GB of float32). A file soundfile fails on part-way is read through PyAV instead."""
        try:
            return self._collected()
        except AudioReadError as failure:
            self.read_through_pyav(failure)
            return self._collected()

    def _collected(self) -> np.ndarray:
        samples = np.empty(len(self), dtype=np.float32)
        filled = 0
        for block in self.blocks(seconds=20.0):  # what a block holds at the file's rate and channels stays small
            if filled + len(block) > len(samples):  # the resampler may give a few samples more than the header says
                samples = np.concatenate([samples[:filled], np.empty(filled + len(block), dtype=np.float32)])
            samples[filled : filled + len(block)] = block
            filled += len(block)
        return samples[:filled] if filled == len(samples) else samples[:filled].copy()
