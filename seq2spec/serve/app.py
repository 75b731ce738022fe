"""The HTTP application: LanguageTool's ``/v2/check`` and ``/v2/languages`` over the speller, OpenAI's
``/v1/audio/transcriptions`` over Whisper, ``/health``; limits, an API key, and every refusal a JSON error."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import urllib.parse
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from seq2spec.serve import languagetool
from seq2spec.serve.batching import Batcher, QueueFull
from seq2spec.serve.languagetool import RequestError
from seq2spec.serve.transcriptions import TranscriptionForm, transcription_response

RETRY_AFTER_SECONDS = 1


@dataclass(frozen=True)
class Limits:
    """What one request may bring."""

    max_body_bytes: int = 25 * 2**20  # OpenAI's own upload limit
    max_audio_seconds: float = 4 * 3600.0
    max_text_characters: int = 100_000
    max_waiting_rows: int = 4096  # rows queued for decoding before new requests get 503


@dataclass
class Services:
    """What the server decodes with: ``correct(lines, language) -> lines`` (None: no speller; ``language``: the code
    of one of ``speller_languages`` the request named, or None for auto), ``transcribe(rows, options) -> records``, a
    row ``(path, language code or None)`` (None: no transcriber), the name clients see for the Whisper model, and the
    API key (None: open)."""

    correct: Callable[[list[str], str | None], list[str]] | None
    transcribe: Callable[[list[tuple[str, str | None]], Hashable], list[dict[str, Any]]] | None
    model_name: str = "whisper-base"
    api_key: str | None = None
    limits: Limits = field(default_factory=Limits)
    text_batch_rows: int = 32
    audio_batch_rows: int = 16
    version: str = "0"
    speller_languages: tuple[str, ...] = ("en",)  # the languages /v2/check accepts (with their regional codes)


def error(
    status: int,
    message: str,
    *,
    kind: str = "invalid_request_error",
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """A refusal as OpenAI's clients expect it (LanguageTool's read the message)."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


class BodyTooLarge(Exception):
    pass


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, refused past ``limit`` bytes (by its declared length, or as it arrives)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def until_done_or_gone(request: Request, work: Awaitable[Any]) -> Any:
    """``work``'s result; if the client disconnects first, ``work`` is cancelled (its rows leave the queue)."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=0.25)
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()
            raise ConnectionAbortedError("the client disconnected")


_Endpoint = Callable[[Request], Awaitable[Response]]


def build_app(services: Services) -> Starlette:
    """The application; its batchers start now and stop when the application shuts down."""
    text_batcher, audio_batcher = _batchers(services)
    routes = [
        Route("/health", _health_endpoint(text_batcher, audio_batcher), methods=["GET"]),
        Route("/v2/languages", _guarded(_languages_endpoint(text_batcher, services), services), methods=["GET"]),
        Route("/v2/check", _guarded(_check_endpoint(text_batcher, services), services), methods=["POST"]),
        Route(
            "/v1/audio/transcriptions",
            _guarded(_transcriptions_endpoint(audio_batcher, services), services),
            methods=["POST"],
        ),
    ]
    app = Starlette(routes=routes, lifespan=_closing_lifespan(text_batcher, audio_batcher))
    app.state.batchers = {"text": text_batcher, "audio": audio_batcher}
    return app


def _batchers(services: Services) -> tuple[Batcher | None, Batcher | None]:
    """``(text batcher, audio batcher)``, each None where the server runs no speller or no transcriber."""
    limits = services.limits
    text_batcher = audio_batcher = None
    if services.correct is not None:
        correct = services.correct
        text_batcher = Batcher(correct, services.text_batch_rows, limits.max_waiting_rows)  # a batch per language
    if services.transcribe is not None:
        audio_batcher = Batcher(services.transcribe, services.audio_batch_rows, limits.max_waiting_rows)
    return text_batcher, audio_batcher


def _authorised(request: Request, api_key: str | None) -> bool:
    """Whether the request carries the API key (always, when the server has none)."""
    if api_key is None:
        return True
    return request.headers.get("authorization", "") == f"Bearer {api_key}"


def _guarded(handler: _Endpoint, services: Services) -> _Endpoint:
    """``handler`` behind the API key, its refusals and failures answered as JSON errors."""

    async def endpoint(request: Request) -> Response:
        if not _authorised(request, services.api_key):
            return error(401, "a valid API key is required: Authorization: Bearer KEY", kind="authentication_error")
        try:
            return await handler(request)
        except BodyTooLarge:
            return error(413, f"the request body is over the limit of {services.limits.max_body_bytes} bytes")
        except RequestError as refused:
            kind = "server_error" if refused.status >= 500 else "invalid_request_error"
            return error(refused.status, str(refused), kind=kind)
        except QueueFull as full:
            return error(
                503,
                f"the server is busy: {full}; retry later",
                kind="server_busy",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        except ConnectionAbortedError:
            return Response(status_code=499)
        except Exception as failure:  # noqa: BLE001 - a decoding fault answers this request; the server stays up
            return error(500, f"decoding failed: {type(failure).__name__}: {failure}", kind="server_error")

    return endpoint


def _health_endpoint(text_batcher: Batcher | None, audio_batcher: Batcher | None) -> _Endpoint:
    """``/health``: what the server runs, how many rows wait for each batcher and what each has decoded."""
    pairs = (("text", text_batcher), ("audio", audio_batcher))
    running = {name: batcher for name, batcher in pairs if batcher is not None}

    async def health(request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "speller": text_batcher is not None,
                "transcriber": audio_batcher is not None,
                "waiting_rows": {name: batcher.waiting_rows for name, batcher in running.items()},
                "batches": {name: asdict(batcher.stats) for name, batcher in running.items()},
            }
        )

    return health


def _languages_endpoint(text_batcher: Batcher | None, services: Services) -> _Endpoint:
    """``/v2/languages``: LanguageTool's list of the speller's languages (404 without a speller)."""
    listed = list(languagetool.languages(services.speller_languages))

    async def languages(request: Request) -> Response:
        if text_batcher is None:
            raise RequestError(404, "this server runs no speller")
        return JSONResponse(listed)

    return languages


def _check_endpoint(text_batcher: Batcher | None, services: Services) -> _Endpoint:
    """``/v2/check``: the text's lines corrected by the speller, as LanguageTool's matches."""
    limits = services.limits
    listed = languagetool.languages(services.speller_languages)
    only = services.speller_languages[0] if len(services.speller_languages) == 1 else None  # auto: the one language

    async def check(request: Request) -> Response:
        if text_batcher is None:
            raise RequestError(404, "this server runs no speller")
        with text_batcher.arriving():
            form = await text_form(request, limits.max_body_bytes)
            code = languagetool.check_language(form.get("language"), listed) or only
            text = languagetool.text_of(form)
            if len(text) > limits.max_text_characters:
                raise RequestError(
                    413, f"the text has {len(text)} characters, over the limit of {limits.max_text_characters}"
                )
            lines = languagetool.lines_with_offsets(text)
            prose = [line for _, line in lines if line.strip()]
            if len(prose) > limits.max_waiting_rows:
                raise RequestError(
                    413, f"the text has {len(prose)} lines, over the {limits.max_waiting_rows} one request may queue"
                )
            work = text_batcher.enqueue(prose, code)
        corrected = iter(await until_done_or_gone(request, work))
        corrected_lines = [next(corrected) if line.strip() else line for _, line in lines]
        language = form.get("language")
        return JSONResponse(languagetool.check_response(text, corrected_lines, language, services.version, listed))

    return check


def _transcriptions_endpoint(audio_batcher: Batcher | None, services: Services) -> _Endpoint:
    """``/v1/audio/transcriptions``: the uploaded audio transcribed, as OpenAI's response."""
    limits = services.limits

    async def transcriptions(request: Request) -> Response:
        if audio_batcher is None:
            raise RequestError(404, "this server runs no transcriber")
        with audio_batcher.arriving():
            body = await read_body(request, limits.max_body_bytes)
            form = await multipart_form(request, body)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise RequestError(400, "missing the 'file' field: the audio, as multipart/form-data")
        try:
            with tempfile.TemporaryDirectory(prefix="seq2spec-serve-") as folder:
                with audio_batcher.arriving():
                    data = await upload.read()
                    transcription = TranscriptionForm.of(form, services.model_name)
                    path = Path(folder) / _safe_name(upload.filename)
                    path.write_bytes(data)
                    duration = transcription.check_audio(path, limits.max_audio_seconds)
                    work = audio_batcher.enqueue([(str(path), transcription.language)], transcription.options)
                record = (await until_done_or_gone(request, work))[0]
        finally:
            await form.close()
        if "error" in record:  # a decoding fault is the server's (500); a file it cannot read, the request's (400)
            raise RequestError(500 if record["error"].startswith("decoding failed") else 400, record["error"])
        return transcription_response(record, transcription, duration)

    return transcriptions


def _closing_lifespan(*batchers: Batcher | None):
    """The application's lifespan: on shutdown each batcher decodes the jobs already queued, then stops."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        for batcher in batchers:
            if batcher is not None:
                await asyncio.to_thread(batcher.close)

    return lifespan


async def text_form(request: Request, limit: int) -> dict[str, str]:
    """A LanguageTool request's fields: URL-encoded (strict UTF-8), multipart, or the query string."""
    body = await read_body(request, limit)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "multipart/form-data":
        form = await multipart_form(request, body)
        return {key: value for key, value in form.items() if isinstance(value, str)}
    fields = dict(request.query_params)
    if body:
        try:
            text = body.decode("ascii")  # percent-encoded; raw bytes past ASCII are not URL encoding
            parsed = urllib.parse.parse_qs(
                text, keep_blank_values=True, strict_parsing=False, encoding="utf-8", errors="strict"
            )
        except UnicodeDecodeError as bad:
            raise RequestError(
                400, f"the form is not valid UTF-8 URL encoding ({bad.reason} at byte {bad.start})"
            ) from None
        fields.update({key: values[-1] for key, values in parsed.items()})
    return fields


async def multipart_form(request: Request, body: bytes):
    """``body`` parsed as the request's multipart form (its files spooled to disk past 1 MB)."""
    from starlette.datastructures import Headers
    from starlette.formparsers import MultiPartException, MultiPartParser

    async def once():
        yield body

    kind = request.headers.get("content-type", "")
    if not kind.lower().startswith("multipart/form-data"):
        raise RequestError(400, f"expected multipart/form-data, got {kind or 'no content type'}")
    try:
        return await MultiPartParser(Headers(scope=request.scope), once(), max_part_size=len(body) + 1).parse()
    except MultiPartException as bad:
        raise RequestError(400, f"the multipart form cannot be read: {bad.message}") from None


def _safe_name(filename: str | None) -> str:
    """The upload's own name without its folders (its extension tells the audio reader the container)."""
    name = os.path.basename(filename or "") or "audio"
    return "".join(character if character.isalnum() or character in "._-" else "_" for character in name)[-120:]
