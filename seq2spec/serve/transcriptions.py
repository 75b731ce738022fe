"""OpenAI's ``POST /v1/audio/transcriptions`` over ``seq2spec transcribe``'s records.

The fields are OpenAI's: ``file``, ``model``, ``language``, ``prompt``, ``response_format`` (json, text, srt, vtt,
verbose_json), ``timestamp_granularities[]`` (segment, word) and ``temperature``. Each request is decoded as
``seq2spec transcribe`` decodes a file with the server's long form: the same record, rendered in the format asked.
Temperature 0 (the default) is greedy decoding, exactly the model's; above 0 turns on openai-whisper's temperature
fallback (``--temperature-fallback``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.responses import JSONResponse, PlainTextResponse, Response

from seq2spec.serve.languagetool import RequestError
from seq2spec.whisper.languages import language_name, whisper_language
from seq2spec.whisper.request import TranscriptionRequest, WhisperDecoding

RESPONSE_FORMATS = ("json", "text", "srt", "vtt", "verbose_json")
GRANULARITIES = ("segment", "word")


@dataclass(frozen=True)
class DecodeOptions:
    """What a request changes in decoding: requests with equal options share a batch (their languages may differ:
    each file is decoded in its own)."""

    timestamps: bool = False
    words: bool = False
    prompt: str | None = None
    fallback: bool = False
    report_language: bool = False  # verbose_json given no language: the detected one is reported


@dataclass(frozen=True)
class TranscriptionForm:
    """A transcription request's fields, checked."""

    response_format: str
    granularities: tuple[str, ...]
    options: DecodeOptions
    language: str | None = None  # Whisper's code; None: detected

    @classmethod
    def of(cls, form: Any, model_name: str) -> TranscriptionForm:
        """From the multipart form; ``RequestError`` (400) naming a field that is wrong."""
        known = {
            "file",
            "model",
            "language",
            "prompt",
            "response_format",
            "temperature",
            "timestamp_granularities[]",
            "timestamp_granularities",
            "stream",
            "chunking_strategy",
            "include[]",
        }
        unknown = sorted(set(form.keys()) - known)
        if unknown:
            fields = ", ".join(sorted(known))
            raise RequestError(400, f"unknown field(s) {', '.join(unknown)}; this endpoint takes {fields}")
        if not form.get("model"):
            raise RequestError(400, f"missing the 'model' field (this server runs {model_name})")
        response_format = form.get("response_format") or "json"
        if response_format not in RESPONSE_FORMATS:
            raise RequestError(400, f"response_format {response_format!r} is not one of {', '.join(RESPONSE_FORMATS)}")
        granularities = tuple(form.getlist("timestamp_granularities[]") + form.getlist("timestamp_granularities"))
        for granularity in granularities:
            if granularity not in GRANULARITIES:
                raise RequestError(400, f"timestamp_granularities[] {granularity!r} is not one of segment, word")
        if "word" in granularities and response_format != "verbose_json":
            raise RequestError(400, "timestamp_granularities[] word needs response_format verbose_json")
        if str(form.get("stream", "false")).lower() == "true":
            raise RequestError(400, "stream is not supported: the transcript comes whole")
        temperature = _temperature(form.get("temperature"))
        language = form.get("language") or None
        if language is not None:
            try:
                language = whisper_language(language, "language")
            except ValueError as unknown:
                raise RequestError(400, str(unknown)) from None
        prompt = form.get("prompt") or None
        timestamps = response_format in ("srt", "vtt", "verbose_json")
        report = response_format == "verbose_json" and language is None
        options = DecodeOptions(timestamps, "word" in granularities, prompt, temperature > 0, report)
        return cls(response_format, granularities or ("segment",), options, language)

    def check_audio(self, path: Path, max_seconds: float) -> float:
        """The upload's duration in seconds; ``RequestError`` 400 when it is not audio, 422 when it is too long."""
        from seq2spec.whisper.audio import AudioError, AudioFile

        if path.stat().st_size == 0:
            raise RequestError(400, "the uploaded file is empty (0 bytes)")
        try:
            seconds = len(AudioFile(path)) / 16_000
        except AudioError as bad:
            raise RequestError(400, f"the uploaded file cannot be read as audio: {bad}") from None
        if seconds > max_seconds:
            raise RequestError(422, f"the audio lasts {seconds:.0f} s, over the limit of {max_seconds:.0f} s")
        return seconds


def _temperature(value: Any) -> float:
    if value in (None, ""):
        return 0.0
    try:
        temperature = float(value)
    except (TypeError, ValueError):
        raise RequestError(400, f"temperature must be a number from 0 to 1, got {value!r}") from None
    if not 0.0 <= temperature <= 1.0:
        raise RequestError(400, f"temperature must be a number from 0 to 1, got {value!r}")
    return temperature


def transcription_response(record: dict[str, Any], request: TranscriptionForm, duration: float) -> Response:
    """The record in the format asked for."""
    from seq2spec.whisper.records import render

    text = record["text"].strip()
    if request.response_format == "json":
        return JSONResponse({"text": text})
    if request.response_format == "text":
        return PlainTextResponse(text + "\n")
    if request.response_format in ("srt", "vtt"):
        media = "application/x-subrip" if request.response_format == "srt" else "text/vtt"
        return PlainTextResponse(render(record, request.response_format), media_type=media)
    verbose: dict[str, Any] = {
        "task": "transcribe",
        "language": language_name(record.get("language") or request.language or "en"),
        "duration": round(duration, 3),
        "text": text,
    }
    if "segment" in request.granularities:
        verbose["segments"] = [
            {"id": index, "start": segment["start"], "end": segment["end"], "text": segment["text"]}
            for index, segment in enumerate(record.get("segments", []))
        ]
    if "word" in request.granularities:
        verbose["words"] = [
            {"word": word["word"].strip(), "start": word["start"], "end": word["end"]}
            for word in record.get("words", [])
        ]
    return JSONResponse(verbose)


def transcriber(speculator, request: TranscriptionRequest):
    """The function the audio batcher calls: ``(rows, DecodeOptions) -> records``, a row ``(path, language code or
    None to detect it)``, as ``seq2spec transcribe`` makes them with ``request`` (its long form and batch size;
    timestamps, words, fallback and prompt as each call asks, each file in its own language); a batch that fails is
    decoded file by file. A request for verbose_json given no language gets each file's detected language in its
    record (``language``)."""
    from seq2spec.whisper.records import records_one_by_one_on_failure

    def transcribe(rows: list[tuple[str, str | None]], options: DecodeOptions) -> list[dict[str, Any]]:
        decoding = WhisperDecoding(temperature_fallback=options.fallback, initial_prompt=options.prompt)
        asked = request.updated(
            return_timestamps=options.timestamps,
            word_timestamps=options.words,
            decoding=decoding,
        )
        paths = [path for path, _ in rows]
        languages = {Path(path): language for path, language in rows}
        records = records_one_by_one_on_failure(speculator, list(languages), asked, languages=languages)
        by_file = {record["file"]: record for record in records}
        answers = [by_file[str(Path(path))] for path in paths]
        if options.report_language:  # detected as decoding detected it, on the same features
            for record, code in zip(answers, speculator.detect_language(paths), strict=True):
                record["language"] = code
        return answers

    return transcribe
