"""Audio in the formats soundfile cannot read: voice memos (``.m4a``), video and call recordings (``.mp4``,
``.webm``, ``.mkv``, ``.mov``), ``.aac``, ``.wma``, ``.amr``. PyAV (FFmpeg's decoders, inside its wheel; the
``[whisper]`` extra installs it) decodes the file's first audio stream, mixed down to mono and resampled to 16 kHz,
into a temporary float32 WAV file, written as it is decoded, which is then read like any other: a long recording is
never held whole. The same decoding is the second chance of a file soundfile fails on (``audio.read_through_pyav``).
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import numpy as np

from seq2spec.whisper.audio_types import SAMPLING_RATE, AudioError

logger = logging.getLogger(__name__)

CONTAINER_EXTENSIONS = frozenset(
    {".m4a", ".m4b", ".mp4", ".aac", ".webm", ".mkv", ".mka", ".mov", ".wma", ".amr", ".3gp", ".avi"}
)


def is_container(path: str | Path) -> bool:
    """Whether ``path`` names a format read through PyAV (by its extension)."""
    return Path(path).suffix.lower() in CONTAINER_EXTENSIONS


def _av(path: Path):
    try:
        import av
    except ImportError:
        raise AudioError(
            f'{path}: reading {path.suffix} files needs PyAV: pip install av (or "seq2spec[whisper]"), or convert '
            "the file first (ffmpeg -i in.m4a out.wav)"
        ) from None
    return av


def transcoded(path: str | Path) -> Path:
    """A temporary 16-kHz mono float32 WAV file holding the audio of ``path`` (the caller removes it), packets that
    cannot be decoded left out (with a warning), as FFmpeg does; ``AudioError`` naming the file when PyAV is missing,
    the file has no audio stream or cannot be decoded."""
    import soundfile

    path = Path(path)
    av = _av(path)
    handle, target = tempfile.mkstemp(prefix="seq2spec-", suffix=".wav")
    os.close(handle)
    written = skipped = 0
    try:
        with (
            av.open(str(path)) as container,
            soundfile.SoundFile(target, "w", samplerate=SAMPLING_RATE, channels=1, subtype="FLOAT") as out,
        ):
            if not container.streams.audio:
                raise AudioError(f"{path}: has no audio stream")
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLING_RATE)
            for packet in container.demux(stream):
                try:
                    frames = packet.decode()
                except av.error.InvalidDataError:  # a damaged packet (a file cut off mid-packet): FFmpeg skips it too
                    skipped += 1
                    continue
                for frame in frames:
                    written += _write(out, resampler.resample(frame))
            written += _write(out, resampler.resample(None))  # what the resampler still holds
    except BaseException as error:  # the partial copy never stays behind, not even after Ctrl-C
        os.remove(target)
        if isinstance(error, AudioError) or not isinstance(error, Exception):
            raise
        reason = str(error).strip() or type(error).__name__
        raise AudioError(f"{path}: cannot be read as audio ({reason})") from error
    if written == 0:
        os.remove(target)
        raise AudioError(f"{path}: contains no audio samples")
    if skipped:
        logger.warning("%s: %d damaged packet(s) could not be decoded and were skipped", path, skipped)
    return Path(target)


def pyav_installed() -> bool:
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def _write(out, frames) -> int:
    count = 0
    for frame in frames:
        samples = frame.to_ndarray().reshape(-1).astype(np.float32, copy=False)  # packed mono: [1, samples]
        out.write(samples)
        count += len(samples)
    return count


def container_seconds(path: str | Path) -> float:
    """Length from the container's header (0.0 when PyAV is missing or the file unreadable)."""
    try:
        import av

        with av.open(str(path)) as container:
            return (container.duration or 0) / av.time_base
    except Exception:  # noqa: BLE001
        return 0.0
