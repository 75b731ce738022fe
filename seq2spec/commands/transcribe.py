"""``seq2spec transcribe``: a folder (or list) of audio files into a JSONL of transcripts, resumably.

Each file's record is appended and synced as soon as its batch is decoded: ``{"file", "text", "duration"}`` (plus
``"segments"`` with ``--timestamps``, ``"words"`` with ``--word-timestamps``) or ``{"file", "error"}``. A rerun
skips files already in the output; a record cut off by a killed run is removed first, so a kill loses at most the
batch in flight. One run writes an output at a time. ``--format txt|srt|vtt`` also writes one such file per audio
file, mirroring the input folders, into a folder beside the JSONL.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from seq2spec.commands.flags import (
    add_ray_flags,
    add_runtime_flags,
    add_speculation_flags,
    apply_process_settings,
    plain_text,
    positive_int,
    speculation_changes,
    torch_dtype,
)
from seq2spec.commands.outputs import (
    JsonlRecords,
    OutputError,
    OutputLock,
    check_output_path,
    resolved_output,
    write_file_atomically,
)
from seq2spec.commands.stopping import exit_status, stops_deferred
from seq2spec.whisper.audio import duration_seconds, find_audio
from seq2spec.whisper.languages import check_spoken, whisper_language
from seq2spec.whisper.progress import AudioProgress
from seq2spec.whisper.records import records_one_by_one_on_failure, render
from seq2spec.whisper.request import LONG_FORMS, TranscriptionRequest, WhisperDecoding
from seq2spec.whisper.speech import load_detector


def same_file(path: str | Path) -> str:
    """A key that two names of one file share, from this working directory: relative or absolute, with ``./`` or
    ``..``, or through a symbolic link."""
    return os.path.realpath(path)


def stamp(path: str | Path) -> list[int] | None:
    """A file's size and modification time (None when it cannot be read): a record made before the file changed
    (a recording still being written) is not done."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return [status.st_size, status.st_mtime_ns]


def record_key(record: dict[str, Any]) -> str:
    """The file a record is for: its resolved ``path``, written beside the name as given, so that a rerun from
    another folder finds it; records of earlier versions have only the name, resolved from here."""
    return record.get("path") or same_file(record["file"])


def current(record: dict[str, Any]) -> bool:
    """Whether the record was made from its file as it is now (records of earlier versions carry no stamp)."""
    return "stamp" not in record or record["stamp"] == stamp(record_key(record))


def with_identity(record: dict[str, Any], path: Path) -> dict[str, Any]:
    """``record`` with the file's resolved path and stamp after its name."""
    return {"file": record["file"], "path": same_file(path), "stamp": stamp(path), **record}


def transcribed(records: JsonlRecords) -> set[str]:
    """Keys of the files with a transcript in ``records`` made from the file as it is now (an error record does not
    count: a rerun tries its file again)."""
    return {record_key(r) for r in records.records if "error" not in r and current(r)}


def failed_only(records: JsonlRecords) -> set[str]:
    """Keys of the files with an error record and no transcript (under any of their names)."""
    done = transcribed(records)
    return {record_key(r) for r in records.records if "error" in r and record_key(r) not in done}


def completed_files(out: Path) -> set[str]:
    """Files transcribed in ``out``, by ``same_file`` key (a record cut off by a killed run is removed first)."""
    records = JsonlRecords(out)
    records.read()
    return transcribed(records)


def side_file(folder: Path, audio: Path, root: Path, fmt: str) -> Path:
    """Where an audio file's ``fmt`` file goes: its path below ``root``, mirrored into ``folder``."""
    try:
        relative = audio.resolve().relative_to(root)
    except ValueError:
        relative = Path(audio.name)
    return folder / relative.parent / f"{relative.name}.{fmt}"


def common_root(files: list[Path]) -> Path:
    parents = [str(path.resolve().parent) for path in files]
    return Path(os.path.commonpath(parents)) if parents else Path.cwd()


def request_of(args: argparse.Namespace) -> TranscriptionRequest:
    """What the command asks of each batch of files (a file's language from ``--language-map`` goes beside it)."""
    decoding = WhisperDecoding(
        temperature_fallback=args.temperature_fallback,
        condition_on_previous_text=args.condition_on_previous_text,
        initial_prompt=args.initial_prompt,
        seed=args.seed,
    )
    return TranscriptionRequest(
        language=args.language,
        task=args.task,
        return_timestamps=args.timestamps,
        word_timestamps=args.word_timestamps,
        long_form=args.long_form,
        batch_size=args.batch_size,
        decoding=decoding,
    )


def load_speculator(args: argparse.Namespace):
    """The speculator ``seq2spec transcribe`` runs (also built once per Ray actor)."""
    from seq2spec import Seq2SeqSpeculator

    dtype = torch_dtype(args.dtype)
    assistant = None if args.assistant == "none" else args.assistant
    languages = {"language_drafts": dict(getattr(args, "language_draft", None) or [])}
    if args.model:
        changes = speculation_changes(args)
        return Seq2SeqSpeculator(args.model, assistant, device=args.device, dtype=dtype, **languages, **changes)
    from seq2spec.default_models import shipped_whisper

    shipped = shipped_whisper(device=args.device, dtype=dtype, with_draft=args.assistant is None)
    draft = shipped.draft if args.assistant is None else assistant
    languages["language_drafts"] = {**shipped.language_drafts, **languages["language_drafts"]}  # the user's first
    changes = {**shipped.options, **speculation_changes(args)}
    return Seq2SeqSpeculator(shipped.big, draft, shipped.tokenizer, **languages, **changes)


def language_draft(text: str) -> tuple[str, str]:
    """``CODE=DRAFT`` of ``--language-draft``: Whisper's code and the draft's name or path."""
    code, separator, draft = text.partition("=")
    if not separator or not code.strip() or not draft.strip():
        raise argparse.ArgumentTypeError(f"expected CODE=DRAFT (fr=path/to/draft), got {text!r}")
    try:
        return whisper_language(code.strip(), "--language-draft"), draft.strip()
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def read_language_map(path: Path) -> dict[str, str]:
    """A language map file: ``audio path<TAB>language`` per line (paths relative to the map's folder; blank lines
    and lines starting with # skipped), keyed by ``same_file`` of each audio path."""
    languages: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        audio, separator, code = line.rpartition("\t")
        if not separator or not audio.strip() or not code.strip():
            raise ValueError(f"{path}:{number}: expected 'audio path<TAB>language code', got {line!r}")
        languages[same_file(path.parent / audio.strip())] = whisper_language(code.strip(), f"{path}:{number}")
    return languages


def run(args: argparse.Namespace) -> int:
    apply_process_settings(args)
    try:
        if args.language is not None:
            args.language = whisper_language(args.language, "--language")
        args.languages = read_language_map(args.language_map) if args.language_map is not None else {}
        files = find_audio(args.inputs)
        args.out = resolved_output(args.out)  # through a symbolic link: the file it names is written and locked
        check_output_path(args.out, files)
        with OutputLock(args.out):
            return _transcribe(args, files)
    except (FileNotFoundError, OutputError, ValueError, UnicodeDecodeError) as error:
        print(f"seq2spec transcribe: {error}", file=sys.stderr)
        return 2


def _transcribe(args: argparse.Namespace, files: list[Path]) -> int:
    out: Path = args.out
    results = JsonlRecords(out)
    results.read()
    if results.corrupt_lines:
        print(f"{out}: {results.corrupt_lines} unreadable line(s) skipped; their files are done again", file=sys.stderr)
    failed_keys = failed_only(results)
    done = transcribed(results) | (failed_keys if args.skip_failed else set())
    todo = [f for f in files if same_file(f) not in done]
    todo_keys = {same_file(f) for f in todo}
    retried = sum(1 for key in todo_keys if key in failed_keys)
    changed = {record_key(r) for r in results.records if "error" not in r and not current(r)} & todo_keys
    durations = {f: duration_seconds(f) for f in todo}
    todo.sort(key=lambda f: durations[f])  # similar lengths share a batch
    again = f" ({retried} that failed before tried again)" if retried else ""
    again += f" ({len(changed)} changed since their transcript)" if changed else ""
    print(
        f"{len(files)} audio files, {len(files) - len(todo)} already done, {len(todo)} to transcribe{again}",
        file=sys.stderr,
    )
    side = SideFiles(out, args.format, files)
    if todo:
        # their new records replace the old errors and the transcripts of changed files, under any name
        stale = {record_key(r) for r in results.records if record_key(r) in todo_keys}
        if stale:
            results.drop_where(lambda record: record_key(record) in stale)
        status = _transcribe_files(args, todo, durations, results, side)
        if status is not None:
            return status
    if not side.complete(results, files):
        return 1
    if args.skip_failed:
        return 1 if any("error" in r and record_key(r) in todo_keys for r in results.records) else 0
    return 1 if untranscribed(files, results) else 0


def _transcribe_files(
    args: argparse.Namespace, todo: list[Path], durations: dict[Path, float], results: JsonlRecords, side: SideFiles
) -> int | None:
    """Transcribe ``todo`` into ``results`` batch by batch (each batch's side files written as it is done); an exit
    status when the run ends early (a model that cannot be loaded, a stop), else None."""
    try:
        request = request_of(args)
        if request.finds_speech:
            load_detector()
        speculator = load_speculator(args)
        check_spoken(speculator.big, {args.language, *args.languages.values()} - {None})
    except (FileNotFoundError, ValueError, OSError, ImportError) as error:
        print(f"seq2spec transcribe: {error}", file=sys.stderr)
        return 2
    run = _Run(todo, durations)
    with results:
        try:
            for start in range(0, len(todo), args.batch_size):
                batch = todo[start : start + args.batch_size]
                languages = {path: args.languages.get(same_file(path), args.language) for path in batch}
                records = records_one_by_one_on_failure(
                    speculator, batch, request, languages=languages, on_progress=run.seconds_done.add
                )
                run.keep(records, batch, speculator.last_stats, results, side)
        except KeyboardInterrupt as stop:
            run.progress.close()
            print(
                f"seq2spec transcribe: stopped; {run.transcripts} files transcribed in this run are kept in "
                f"{args.out}, rerun to continue",
                file=sys.stderr,
            )
            return exit_status(stop)
    run.finish(args.out)
    return None


class _Run:
    """The progress and counts of one run of ``_transcribe_files``."""

    def __init__(self, todo: list[Path], durations: dict[Path, float]) -> None:
        from tqdm import tqdm

        self.todo, self.durations = todo, durations
        self.failures = self.transcripts = self.proposed = self.accepted = self.files_done = 0
        self.audio_seconds = self.covered = 0.0  # seconds transcribed; seconds of audio in the batches done
        self.started = time.perf_counter()
        total = round(sum(durations.values()), 1)
        self.progress = tqdm(total=total, unit="s", desc="audio", dynamic_ncols=True, file=sys.stderr)
        self.seconds_done = AudioProgress(self.progress)

    def keep(
        self, records: list[dict[str, Any]], batch: list[Path], stats: Any, results: JsonlRecords, side: SideFiles
    ) -> None:
        """A batch's records appended to ``results`` (each written and counted, or not at all), side files written."""
        if any("text" in r for r in records):
            self.proposed += stats.proposed_draft_tokens
            self.accepted += stats.accepted_draft_tokens
        by_name = {str(path): path for path in batch}
        for record in records:
            record = with_identity(record, by_name[record["file"]])
            with stops_deferred():  # a record is written and counted, or not at all
                results.append(record)
                if "error" in record:
                    self.failures += 1
                    continue
                self.transcripts += 1
            self.audio_seconds += record["duration"]
            side.write(record)
        self.covered += sum(self.durations[p] for p in batch)
        self.files_done += len(batch)
        self.seconds_done.move_to(self.covered)
        rtf = _rtf(self.started, self.audio_seconds)
        self.progress.set_postfix(files=f"{self.files_done}/{len(self.todo)}", rtf=rtf)

    def finish(self, out: Path) -> None:
        self.progress.close()
        wall = time.perf_counter() - self.started
        acceptance = f"{self.accepted / self.proposed:.2f}" if self.proposed else "n/a (no draft)"
        print(
            f"done: {len(self.todo)} files ({self.failures} failed), {self.audio_seconds:.1f} s of audio in "
            f"{wall:.1f} s, real-time factor {_rtf(self.started, self.audio_seconds)}, acceptance {acceptance}; "
            f"results in {out}",
            file=sys.stderr,
        )


def _rtf(started: float, audio_seconds: float) -> str:
    """Seconds of decoding per second of audio ("n/a" before any audio is decoded)."""
    return f"{(time.perf_counter() - started) / audio_seconds:.3f}" if audio_seconds else "n/a"


class SideFiles:
    """``--format txt|srt|vtt``: a file per transcript, mirroring the inputs' folders into a folder beside the JSONL,
    written from the records (so that a rerun completes what an earlier run did not write), each whole or not at all.
    A side file that cannot be written is reported and left for a rerun; the JSONL record stays."""

    def __init__(self, out: Path, fmt: str, files: list[Path]) -> None:
        self.fmt = fmt
        self.folder = out.with_name(out.stem + f"_{fmt}") if fmt != "jsonl" else None
        self.root = common_root(files)
        self.failed: list[str] = []

    def path(self, record: dict[str, Any]) -> Path:
        return side_file(self.folder, Path(record.get("path") or record["file"]), self.root, self.fmt)

    def write(self, record: dict[str, Any]) -> None:
        if self.folder is None or "error" in record:
            return
        try:
            write_file_atomically(self.path(record), render(record, self.fmt))
        except OutputError as error:
            self.failed.append(str(error))

    def complete(self, results: JsonlRecords, files: list[Path]) -> bool:
        """Write each input's missing side file from its transcript; False (after saying why) where one failed."""
        if self.folder is not None:
            keys = {same_file(path) for path in files}
            latest = {record_key(r): r for r in results.records if "error" not in r and current(r)}
            for key, record in latest.items():
                if key in keys and not self.path(record).exists():
                    self.write(record)
        for reason in self.failed:
            print(f"seq2spec transcribe: {reason}; the transcript is in the JSONL, rerun to write it", file=sys.stderr)
        return not self.failed


def untranscribed(files: list[Path], results: JsonlRecords) -> int:
    """How many of ``files`` have no transcript in ``results`` made from them as they are now."""
    done = transcribed(results)
    return sum(1 for path in files if same_file(path) not in done)


def add_parser(commands) -> argparse.ArgumentParser:
    transcribe = commands.add_parser(
        "transcribe",
        help="transcribe audio files or folders (recursively) into a JSONL file",
        description=plain_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    transcribe.add_argument(
        "inputs", nargs="+", help="audio files and folders (wav, flac, mp3, ogg, ...; m4a, mp4, webm through PyAV)"
    )
    transcribe.add_argument("--out", type=Path, required=True, help="JSONL results (appended; a rerun resumes)")
    transcribe.add_argument("--model", help="Whisper model name or path (default: the embedded whisper-base)")
    transcribe.add_argument(
        "--assistant",
        help="draft model name or path, or 'none' (default: the shipped distilled draft with the embedded base, "
        "else none)",
    )
    _add_language_flags(transcribe)
    transcribe.add_argument(
        "--task",
        choices=["transcribe", "translate"],
        default="transcribe",
        help="transcribe in the speech's language, or translate it into English text (default transcribe)",
    )
    transcribe.add_argument("--timestamps", action="store_true", help="segments with start and end times")
    transcribe.add_argument(
        "--word-timestamps",
        action="store_true",
        help="words with start and end times (Whisper's cross-attention alignment), in the JSONL and as one "
        "SRT/VTT cue per word",
    )
    transcribe.add_argument(
        "--batch-size",
        type=positive_int,
        default=16,
        help="files decoded together, sorted by duration (with --long-form batched: speech pieces) (default 16)",
    )
    _add_decoding_flags(transcribe)
    transcribe.add_argument(
        "--format",
        choices=["jsonl", "txt", "srt", "vtt"],
        default="jsonl",
        help="also write a text, SubRip or WebVTT file per audio file, mirroring the input folders into a folder "
        "beside the JSONL (OUT_txt, ...); a rerun writes those missing (default: the JSONL only)",
    )
    transcribe.add_argument(
        "--skip-failed",
        action="store_true",
        help="count files with an error record in --out as done: a rerun does not try them again, and the exit "
        "status is 1 only when this run recorded an error (default: they are tried again, and the exit status is 1 "
        "while any input has no transcript)",
    )
    add_runtime_flags(transcribe)
    add_speculation_flags(transcribe)
    add_ray_flags(transcribe)
    transcribe.set_defaults(run=run)
    return transcribe


def _add_decoding_flags(parser: argparse.ArgumentParser) -> None:
    decoding = parser.add_argument_group(
        "decoding", "the default is greedy decoding: exactly the big model's own greedy output"
    )
    decoding.add_argument(
        "--temperature-fallback",
        action="store_true",
        help="openai-whisper's fallback: a window whose text is repetitive (gzip compression ratio > 2.4) or "
        "unlikely (average log-probability < -1.0) is decoded again by sampling at temperatures 0.2, 0.4, ... 1.0; "
        "a likely silent window (no-speech probability > 0.6) is skipped",
    )
    decoding.add_argument(
        "--condition-on-previous-text",
        action="store_true",
        help="in audio longer than 30 s, decode each window after the text of the windows before it",
    )
    decoding.add_argument("--initial-prompt", metavar="TEXT", help="text to decode the first window after")
    decoding.add_argument(
        "--long-form",
        choices=LONG_FORMS,
        default="sequential",
        help="how audio over 30 s is decoded. sequential (default): Whisper's own long form, window after window, "
        "exactly the model's generate; vad: the same on the speech Silero VAD finds, each file's speech decoded as "
        "one recording with what is not speech cut out, times in the file's own; batched: that speech joined into "
        "pieces of at most 30 s with the pauses left out, the pieces of --batch-size files decoded together in "
        "batches of --batch-size, each piece exactly the model's output for it (text across pieces can differ from "
        "the sequential mode's), files read piece by piece. vad and batched give silence and noise no words",
    )
    decoding.add_argument(
        "--seed", type=int, default=0, help="seed of the sampled fallback passes (default: 0, reproducible)"
    )


def _add_language_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--language", help="language code such as en (default: detected per file)")
    parser.add_argument(
        "--language-map",
        type=Path,
        metavar="TSV",
        help="each file's language where known: lines 'audio path<TAB>code' (paths relative to the map's folder); "
        "files not listed take --language, else their detected language",
    )
    parser.add_argument(
        "--language-draft",
        action="append",
        type=language_draft,
        metavar="CODE=DRAFT",
        help="a draft for the files given that language (by --language or --language-map) or detected in, a name "
        "or path as --assistant takes (a folder saved by save_whisper_draft too): fr=drafts/french; repeatable",
    )
