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
    positive_int,
    speculation_changes,
    torch_dtype,
)
from seq2spec.commands.outputs import JsonlRecords, OutputError, OutputLock, check_output_path, write_file_atomically
from seq2spec.commands.stopping import exit_status, stops_deferred
from seq2spec.whisper.audio import AudioError, AudioFile, duration_seconds, find_audio, load_audio
from seq2spec.whisper.progress import AudioProgress
from seq2spec.whisper.speech import LONG_FORMS, clip_speech, load_detector


def same_file(path: str | Path) -> str:
    """A key that two names of one file share, from this working directory: relative or absolute, with ``./`` or
    ``..``, or through a symbolic link. Records keep the name they were written with; resume compares these keys."""
    return os.path.realpath(path)


def transcribed(records: JsonlRecords) -> set[str]:
    """Files with a transcript in ``records`` (an error record does not count: a rerun tries its file again)."""
    return {record["file"] for record in records.records if "error" not in record}


def failed_only(records: JsonlRecords) -> set[str]:
    """Files with an error record and no transcript (under any of their names)."""
    done = {same_file(name) for name in transcribed(records)}
    return {record["file"] for record in records.records if "error" in record and same_file(record["file"]) not in done}


def completed_files(out: Path) -> set[str]:
    """Files transcribed in ``out`` (a record cut off by a killed run is removed first)."""
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
    *,
    language: str | None,
    task: str,
    timestamps: bool,
    on_progress=None,
    decoding=None,
    words: bool = False,
    long_form: str = "sequential",
    piece_batch_size: int = 16,
    vad: bool = False,
) -> list[dict[str, Any]]:
    """One record per file: ``{"file", "duration", "text"[, "segments"]}``, or ``{"file", "error"}`` for a file
    that cannot be read as audio. Error records come first, then the transcripts in input order. ``on_progress``
    is called with seconds of audio as they are decoded; ``decoding`` is a ``WhisperDecoding`` (None: greedy);
    ``words`` adds ``"words"`` with their times; ``long_form="batched"`` decodes the files' speech pieces together
    in batches of ``piece_batch_size``; ``vad`` cuts out what is not speech before the sequential long form."""
    records: list[dict[str, Any]] = []
    clips, names = [], []
    read = AudioFile if long_form == "batched" or vad else load_audio  # read stretch by stretch
    for path in paths:
        try:
            clip = read(path)
            if isinstance(clip, AudioFile):
                clip_speech(clip)  # read to its end here: a file that fails part-way costs its own record only
            clips.append(clip)
            names.append(path)
        except AudioError as error:
            records.append({"file": str(path), "error": str(error)})
    if not clips:
        return records
    results = speculator.transcribe(
        clips,
        sampling_rate=16_000,  # of the arrays
        language=language,
        task=task,
        return_timestamps=timestamps,
        batch_size=piece_batch_size if long_form == "batched" else len(clips),
        progress=on_progress or False,
        decoding=decoding,
        word_timestamps=words,
        long_form=long_form,
        vad=vad,
    )
    for path, clip, result in zip(names, clips, results, strict=True):
        record: dict[str, Any] = {"file": str(path), "duration": round(len(clip) / 16_000, 3)}
        if isinstance(result, dict):
            record.update(result)
        else:
            record["text"] = result
        records.append(record)
    return records


def records_one_by_one_on_failure(speculator, paths: list[Path], **options: Any) -> list[dict[str, Any]]:
    """``transcribe_records`` of the batch; if the batch fails, of each file alone, so that one file that cannot be
    decoded costs only its own record (``{"file", "error"}``) and the rest of the batch is transcribed."""
    try:
        return transcribe_records(speculator, paths, **options)
    except Exception as error:  # noqa: BLE001 - any failure of a batch is retried file by file
        reason = f"{type(error).__name__}: {error}"
        if len(paths) == 1:
            return [{"file": str(paths[0]), "error": f"decoding failed ({reason})"}]
        print(
            f"seq2spec transcribe: a batch of {len(paths)} files failed ({reason}); decoding them one by one",
            file=sys.stderr,
        )
        return [record for path in paths for record in records_one_by_one_on_failure(speculator, [path], **options)]


def decoding_of(args: argparse.Namespace):
    """The command's ``WhisperDecoding``: fallback, previous-text conditioning, initial prompt."""
    from seq2spec.whisper.transcription import WhisperDecoding

    return WhisperDecoding(
        temperature_fallback=args.temperature_fallback,
        condition_on_previous_text=args.condition_on_previous_text,
        initial_prompt=args.initial_prompt,
        seed=args.seed,
    )


def load_speculator(args: argparse.Namespace):
    """The speculator ``seq2spec transcribe`` runs (also built once per Ray actor)."""
    from seq2spec import Seq2SeqSpeculator

    dtype = torch_dtype(args.dtype)
    assistant = None if args.assistant == "none" else args.assistant
    if args.model:
        return Seq2SeqSpeculator(args.model, assistant, device=args.device, dtype=dtype, **speculation_changes(args))
    from seq2spec.default_models import load_whisper_base
    from seq2spec.int8 import float_dtype, is_int8_dtype, quantize_int8_pair
    from seq2spec.whisper.draft import WHISPER_BASE_DRAFT_DIR, load_whisper_draft

    big, processor = load_whisper_base(device=args.device, dtype=float_dtype(dtype))
    if args.assistant is None and WHISPER_BASE_DRAFT_DIR.is_dir():
        assistant = load_whisper_draft(big)  # the shipped distilled draft, with its tuned options
    if is_int8_dtype(dtype):
        quantize_int8_pair(big, assistant if not isinstance(assistant, str) else None)
    return Seq2SeqSpeculator(big, assistant, processor, **speculation_changes(args))


def run(args: argparse.Namespace) -> int:
    apply_process_settings(args)
    try:
        files = find_audio(args.inputs)
        check_output_path(args.out, files)
        with OutputLock(args.out):
            return _transcribe(args, files)
    except (FileNotFoundError, OutputError) as error:
        print(f"seq2spec transcribe: {error}", file=sys.stderr)
        return 2


def _transcribe(args: argparse.Namespace, files: list[Path]) -> int:
    from tqdm import tqdm

    out: Path = args.out
    results = JsonlRecords(out)
    results.read()
    if results.corrupt_lines:
        print(f"{out}: {results.corrupt_lines} unreadable line(s) skipped; their files are done again", file=sys.stderr)
    failed_before = failed_only(results)
    failed_keys = {same_file(name) for name in failed_before}
    done = {same_file(name) for name in transcribed(results)} | (failed_keys if args.skip_failed else set())
    todo = [f for f in files if same_file(f) not in done]
    todo_keys = {same_file(f) for f in todo}
    retried = sum(1 for key in todo_keys if key in failed_keys)
    durations = {f: duration_seconds(f) for f in todo}
    todo.sort(key=lambda f: durations[f])  # similar lengths share a batch
    again = f" ({retried} that failed before tried again)" if retried else ""
    print(
        f"{len(files)} audio files, {len(files) - len(todo)} already done, {len(todo)} to transcribe{again}",
        file=sys.stderr,
    )
    if not todo:
        return 1 if not args.skip_failed and untranscribed(files, results) else 0
    if retried:
        # their new records replace the old errors, under whatever name those were written
        results.drop({name for name in failed_before if same_file(name) in todo_keys})
    try:
        decoding = decoding_of(args)
        if args.long_form == "batched" or args.vad:
            load_detector()
        speculator = load_speculator(args)
    except (FileNotFoundError, ValueError, OSError, ImportError) as error:
        print(f"seq2spec transcribe: {error}", file=sys.stderr)
        return 2
    side_folder = out.with_name(out.stem + f"_{args.format}") if args.format != "jsonl" else None
    root = common_root(files)
    failures = transcripts = 0
    audio_seconds = 0.0
    started = time.perf_counter()
    progress = tqdm(
        total=round(sum(durations.values()), 1), unit="s", desc="audio", dynamic_ncols=True, file=sys.stderr
    )
    seconds_done = AudioProgress(progress)
    proposed = accepted = 0
    covered = 0.0  # seconds of audio in the batches done
    with results:
        try:
            for start in range(0, len(todo), args.batch_size):
                batch = todo[start : start + args.batch_size]
                records = records_one_by_one_on_failure(
                    speculator,
                    batch,
                    language=args.language,
                    task=args.task,
                    timestamps=args.timestamps,
                    on_progress=seconds_done.add,
                    decoding=decoding,
                    words=args.word_timestamps,
                    long_form=args.long_form,
                    piece_batch_size=args.batch_size,
                    vad=args.vad,
                )
                if any("text" in r for r in records):
                    proposed += speculator.last_stats.proposed_draft_tokens
                    accepted += speculator.last_stats.accepted_draft_tokens
                for record in records:
                    with stops_deferred():  # a record is written and counted, or not at all
                        results.append(record)
                        if "error" in record:
                            failures += 1
                            continue
                        transcripts += 1
                    audio_seconds += record["duration"]
                    if side_folder is not None:
                        target = side_file(side_folder, Path(record["file"]), root, args.format)
                        write_file_atomically(target, render(record, args.format))
                covered += sum(durations[p] for p in batch)
                seconds_done.move_to(covered)
                rtf = (time.perf_counter() - started) / max(audio_seconds, 1e-9)
                progress.set_postfix(files=f"{start + len(batch)}/{len(todo)}", rtf=f"{rtf:.3f}")
        except KeyboardInterrupt as stop:
            progress.close()
            print(
                f"seq2spec transcribe: stopped; {transcripts} files transcribed in this run are kept in {out}, rerun "
                "to continue",
                file=sys.stderr,
            )
            return exit_status(stop)
    progress.close()
    wall = time.perf_counter() - started
    acceptance = f"{accepted / proposed:.2f}" if proposed else "n/a (no draft)"
    print(
        f"done: {len(todo)} files ({failures} failed), {audio_seconds:.1f} s of audio in {wall:.1f} s, "
        f"real-time factor {wall / max(audio_seconds, 1e-9):.3f}, acceptance {acceptance}; results in {out}",
        file=sys.stderr,
    )
    if args.skip_failed:
        return 1 if failures else 0
    return 1 if untranscribed(files, results) else 0


def untranscribed(files: list[Path], results: JsonlRecords) -> int:
    """How many of ``files`` have no transcript in ``results``."""
    done = {same_file(name) for name in transcribed(results)}
    return sum(1 for path in files if same_file(path) not in done)


def add_parser(commands) -> argparse.ArgumentParser:
    transcribe = commands.add_parser(
        "transcribe",
        help="transcribe audio files or folders (recursively) into a JSONL file",
        description=__doc__,
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
    transcribe.add_argument("--language", help="language code such as en (default: detected per file)")
    transcribe.add_argument("--task", choices=["transcribe", "translate"], default="transcribe")
    transcribe.add_argument("--timestamps", action="store_true", help="segments with start and end times")
    transcribe.add_argument(
        "--word-timestamps",
        action="store_true",
        help="words with start and end times (Whisper's cross-attention alignment), in the JSONL and as one "
        "SRT/VTT cue per word",
    )
    transcribe.add_argument("--batch-size", type=positive_int, default=16)
    decoding = transcribe.add_argument_group(
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
        help="sequential (default): Whisper's own long form, window after window, exactly the model's generate; "
        "batched: speech found by Silero VAD and joined into pieces of at most 30 s with the pauses left out, the "
        "pieces of --batch-size files decoded together in batches of --batch-size, each piece exactly the model's "
        "output for it (text across pieces can differ from the sequential mode's), files read piece by piece; "
        "silence and noise give no words",
    )
    decoding.add_argument(
        "--vad",
        action="store_true",
        help="with --long-form sequential: cut out what is not speech (Silero VAD) and decode each file's speech as "
        "one recording, times in the file's own; silence and noise give no words (the batched long form always "
        "does this)",
    )
    decoding.add_argument(
        "--seed", type=int, default=0, help="seed of the sampled fallback passes (default: 0, reproducible)"
    )
    transcribe.add_argument("--format", choices=["jsonl", "txt", "srt", "vtt"], default="jsonl")
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
