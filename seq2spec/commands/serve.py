"""``seq2spec serve``: the speller and the Whisper pair behind the HTTP APIs clients already speak.

    seq2spec serve --port 8080
    curl -d language=en-US -d text='Thsi is a tset.' http://127.0.0.1:8080/v2/check          # LanguageTool
    curl -F file=@talk.wav -F model=whisper-1 http://127.0.0.1:8080/v1/audio/transcriptions   # OpenAI

LanguageTool's ``/v2/check`` and ``/v2/languages`` return the speller's corrections as matches; OpenAI's
``/v1/audio/transcriptions`` returns Whisper's transcript (json, text, srt, vtt, verbose_json with segments and words);
``/health`` says what runs, the rows waiting and the batches decoded. Requests that arrive together are decoded in one
speculative batch, each row keeping its own accepted tokens, so every answer is what the command gives for the same
input. The server listens on 127.0.0.1 unless told otherwise; on any other address it needs ``--api-key`` (clients send
``Authorization: Bearer KEY``) or an explicit ``--no-auth``. SIGTERM or Ctrl-C: the requests in flight are answered, new
ones refused, then it stops.
"""

from __future__ import annotations

import argparse
import os
import sys

from seq2spec.commands.flags import (
    add_runtime_flags,
    add_speculation_flags,
    apply_process_settings,
    draft_keyword,
    plain_text,
    positive_int,
    speculation_changes,
    torch_dtype,
)
from seq2spec.whisper.request import LONG_FORMS, TranscriptionRequest

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def language_codes(text: str) -> list[str]:
    """``--speller-languages``: language codes, comma-separated, each checked as ``SpellingSettings`` checks it."""
    from seq2spec.spelling.settings import SpellingSettings

    codes = [code.strip() for code in text.split(",") if code.strip()]
    if not codes:
        raise argparse.ArgumentTypeError("name at least one language code, such as en")
    try:
        return list(dict.fromkeys(SpellingSettings(language=code).language for code in codes))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def check_access(args: argparse.Namespace) -> str | None:
    """The API key the server requires (None: none); an error message when the address needs one and none is set."""
    key = args.api_key or os.environ.get("SEQ2SPEC_API_KEY") or None
    if key is None and args.host not in LOCAL_HOSTS and not args.no_auth:
        raise ValueError(
            f"--host {args.host} lets other machines in: set --api-key KEY (or SEQ2SPEC_API_KEY), or pass --no-auth "
            "to serve without one"
        )
    return None if args.no_auth else key


def build_services(args: argparse.Namespace):
    """The models the server decodes with, loaded as ``seq2spec correct`` and ``seq2spec transcribe`` load them."""
    from seq2spec import Seq2SeqSpeculator
    from seq2spec.commands.correct import one_line
    from seq2spec.commands.transcribe import load_speculator
    from seq2spec.serve.app import Limits, Services
    from seq2spec.serve.transcriptions import transcriber

    correct = transcribe = None
    if not args.no_speller:
        dtype = torch_dtype(args.dtype)
        draft = draft_keyword(args.speller_draft)
        speller = Seq2SeqSpeculator(args.speller, **draft, device=args.device, dtype=dtype, **speculation_changes(args))
        for code in args.speller_languages:
            speller.spelling.updated(language=code)  # a ValueError where the speller's steps are English alone

        def correct(lines: list[str], language: str | None) -> list[str]:
            said = {} if language is None else {"language": language}  # None: auto, the speller's own setting
            return [one_line(line) for line in speller.correct(lines, truncate=True, **said)]  # as `correct` writes

    if not args.no_transcriber:
        request = TranscriptionRequest(long_form=args.long_form, batch_size=args.batch_size)
        transcribe = transcriber(load_speculator(args), request)
    limits = Limits(
        max_body_bytes=args.max_upload_mb * 2**20,
        max_audio_seconds=args.max_audio_seconds,
        max_text_characters=args.max_text_characters,
        max_waiting_rows=args.max_waiting_rows,
    )
    from importlib.metadata import version

    return Services(
        correct,
        transcribe,
        model_name=args.model or "whisper-base",
        api_key=check_access(args),
        limits=limits,
        text_batch_rows=args.text_batch_size,
        audio_batch_rows=args.batch_size,
        version=version("seq2spec"),
        speller_languages=tuple(args.speller_languages),
    )


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from seq2spec.serve.app import build_app
    except ImportError as missing:
        print(
            f'seq2spec serve: {missing.name} is missing: pip install -e ".[serve]" (or seq2spec[serve])',
            file=sys.stderr,
        )
        return 2
    apply_process_settings(args)
    try:
        check_access(args)
    except ValueError as refused:
        print(f"seq2spec serve: {refused}", file=sys.stderr)
        return 2
    if args.no_speller and args.no_transcriber:
        print("seq2spec serve: --no-speller and --no-transcriber leave nothing to serve", file=sys.stderr)
        return 2
    try:
        services = build_services(args)
    except ValueError as refused:  # a speller that cannot correct the languages named
        print(f"seq2spec serve: {refused}", file=sys.stderr)
        return 2
    app = build_app(services)
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=args.graceful_seconds
    )
    server = uvicorn.Server(config)
    server.run()  # uvicorn's own SIGTERM and SIGINT handling: in-flight requests answered, then it stops
    return 0 if server.started else 1


def add_parser(commands) -> argparse.ArgumentParser:
    serve = commands.add_parser(
        "serve",
        help="serve the speller (LanguageTool's API) and Whisper (OpenAI's transcription API) over HTTP",
        description=plain_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine)")
    serve.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    serve.add_argument("--api-key", help="key clients must send as 'Authorization: Bearer KEY' (env SEQ2SPEC_API_KEY)")
    serve.add_argument("--no-auth", action="store_true", help="serve without a key on any address")
    serve.add_argument("--speller", help="speller model: hub name or local path (default: the shipped speller)")
    serve.add_argument(
        "--speller-draft",
        help="the speller's draft, as --draft of seq2spec correct takes it: a model, a seq2spec distill-draft folder, "
        "'input-copy' or 'none' (default: the shipped speller's own proposer; none for another --speller)",
    )
    serve.add_argument(
        "--speller-languages",
        type=language_codes,
        default=["en"],
        metavar="CODE,CODE",
        help="the languages /v2/check accepts, with LanguageTool's regional codes (default en; de,en for a speller of "
        "German and English): each request's lines are corrected with its language (SpellingSettings.language; "
        "auto: the speller's own setting)",
    )
    serve.add_argument("--no-speller", action="store_true", help="serve transcription only")
    serve.add_argument("--model", help="Whisper model: hub name or local path (default: the embedded whisper-base)")
    serve.add_argument("--assistant", help="Whisper draft: name, path or 'none' (default: the shipped draft)")
    serve.add_argument("--no-transcriber", action="store_true", help="serve the speller only")
    serve.add_argument(
        "--long-form",
        choices=LONG_FORMS,
        default="batched",
        help="how audio over 30 s is decoded, as seq2spec transcribe's --long-form (default batched: speech pieces "
        "decoded together)",
    )
    serve.add_argument(
        "--batch-size",
        type=positive_int,
        default=16,
        help="audio files (speech pieces with --long-form batched) decoded together (default 16)",
    )
    serve.add_argument(
        "--text-batch-size",
        type=positive_int,
        default=32,
        help="lines of text from concurrent requests decoded together (default 32)",
    )
    add_limit_flags(serve)
    serve.add_argument("--log-level", default="warning", help="uvicorn's log level (default warning)")
    add_runtime_flags(serve)
    add_speculation_flags(serve)
    serve.set_defaults(run=run)
    return serve


def add_limit_flags(serve: argparse.ArgumentParser) -> None:
    """The limits on what one request may bring and on the queue, and the grace period of a stop."""
    serve.add_argument("--max-upload-mb", type=positive_int, default=25, help="largest request body (default 25 MB)")
    serve.add_argument(
        "--max-audio-seconds",
        type=float,
        default=4 * 3600.0,
        help="longest audio one request may bring (default 4 hours)",
    )
    serve.add_argument(
        "--max-text-characters",
        type=positive_int,
        default=100_000,
        help="longest text one check may bring (default 100,000 characters)",
    )
    serve.add_argument(
        "--max-waiting-rows",
        type=positive_int,
        default=4096,
        help="rows queued before new requests get 503 and Retry-After (default 4096)",
    )
    serve.add_argument(
        "--graceful-seconds",
        type=float,
        default=600.0,
        help="on SIGTERM, how long requests in flight may take to finish (default 600)",
    )
