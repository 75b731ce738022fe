"""A transcript record per audio file, as ``seq2spec transcribe`` writes it and ``seq2spec serve`` answers with it:
``{"file", "duration", "text"[, "segments", "words"]}`` or ``{"file", "error"}``, and its SubRip or WebVTT form."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from seq2spec.whisper.audio import AudioError, AudioFile
from seq2spec.whisper.request import TranscriptionRequest
from seq2spec.whisper.speech import clip_speech


def _timestamp(seconds: float, separator: str) -> str:
    millis = int(round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}{separator}{rest % 1000:03d}"


def render(record: dict[str, Any], fmt: str) -> str:
    """A transcript record as plain text, SubRip or WebVTT (one cue per word when the record has words)."""
    if fmt == "txt":
        return record["text"] + "\n"
    whole = [{"start": 0.0, "end": record.get("duration", 0.0), "text": record["text"]}] if record["text"] else []
    segments = record.get("segments") or whole  # nothing said (silence, noise): no cue
    if record.get("words"):
        segments = [{"start": w["start"], "end": w["end"], "text": w["word"]} for w in record["words"]]
    separator = "," if fmt == "srt" else "."
    blocks = []
    for number, segment in enumerate(segments, start=1):
        start = segment["start"] or 0.0
        end = segment["end"] if segment["end"] is not None else record.get("duration", start)
        timing = f"{_timestamp(start, separator)} --> {_timestamp(end, separator)}"
        blocks.append(f"{number}\n{timing}\n{segment['text']}\n" if fmt == "srt" else f"{timing}\n{segment['text']}\n")
    return ("WEBVTT\n\n" if fmt == "vtt" else "") + "\n".join(blocks)


def transcribe_records(
    speculator,
    paths: list[Path],
    request: TranscriptionRequest,
    *,
    languages: Mapping[Path, str | None] | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> list[dict[str, Any]]:
    """One record per file: ``{"file", "duration", "text"[, "segments", "words"]}``, or ``{"file", "error"}`` for a
    file that cannot be read as audio, decoded as ``request`` asks. Error records come first, then the transcripts in
    input order. ``languages``: each of ``paths``'s language code (or None to detect it) where known, in its record;
    else ``request.language`` serves every file. ``on_progress`` is called with seconds of audio as they are
    decoded."""
    records: list[dict[str, Any]] = []
    clips, names, lengths = [], [], []
    for path in paths:
        try:  # each file read to its end here: one that fails part-way costs its own record only
            clip = AudioFile(path)
            if request.finds_speech:  # read stretch by stretch where the speech is found
                clip_speech(clip)
                lengths.append(len(clip))
            else:
                lengths.append(clip.read_through())  # block by block; decoded later as it is read again
            clips.append(clip)
            names.append(path)
        except AudioError as error:
            records.append({"file": str(path), "error": str(error)})
    if not clips:
        return records
    given = [languages.get(path) for path in names] if languages is not None else [request.language] * len(names)
    if languages is not None:
        request = request.updated(language=given)
    results = speculator.transcribe(clips, request=request, progress=on_progress or False)
    for path, length, result, code in zip(names, lengths, results, given, strict=True):
        record: dict[str, Any] = {"file": str(path), "duration": round(length / 16_000, 3)}
        if code is not None:
            record["language"] = code
        if isinstance(result, dict):
            record.update(result)
        else:
            record["text"] = result
        records.append(record)
    return records


def records_one_by_one_on_failure(
    speculator, paths: list[Path], request: TranscriptionRequest, **options: Any
) -> list[dict[str, Any]]:
    """``transcribe_records`` of the batch; if the batch fails, of each file alone, so that one file that cannot be
    decoded costs only its own record (``{"file", "error"}``) and the rest of the batch is transcribed."""
    try:
        return transcribe_records(speculator, paths, request, **options)
    except Exception as error:  # noqa: BLE001 - any failure of a batch is retried file by file
        reason = f"{type(error).__name__}: {error}"
        if len(paths) == 1:
            return [{"file": str(paths[0]), "error": f"decoding failed ({reason})"}]
        print(
            f"seq2spec transcribe: a batch of {len(paths)} files failed ({reason}); decoding them one by one",
            file=sys.stderr,
        )
        alone = [records_one_by_one_on_failure(speculator, [path], request, **options) for path in paths]
        return [record for records in alone for record in records]
