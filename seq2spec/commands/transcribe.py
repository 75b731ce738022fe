"""``seq2spec transcribe``: a folder (or list) of audio files into a JSONL of transcripts, resumably.

Each finished file becomes one JSON line, written and flushed at once: ``{"file", "text", "duration"}`` (plus
``"segments"`` with ``--timestamps``) or ``{"file", "error"}``. A rerun skips files already in the output, and a
half-written last line (a killed run) is cut off first, so at most the batch in flight is lost. ``--format
txt|srt|vtt`` also writes one such file per audio file into a folder beside the JSONL.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from seq2spec.commands.flags import (
    add_ray_flags,
    add_runtime_flags,
    add_speculation_flags,
    apply_threads,
    positive_int,
    speculation_changes,
    torch_dtype,
)
from seq2spec.whisper.audio import AudioError, duration_seconds, find_audio, load_audio


def read_jsonl_repairing(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file; a trailing partial line left by a killed run is cut off the file first."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as handle:
            handle.truncate(cut)
        data = data[:cut]
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def completed_files(out: Path) -> set[str]:
    """Files recorded in ``out`` (a partial last line is removed first)."""
    return {record["file"] for record in read_jsonl_repairing(out)} if out.exists() else set()


def _timestamp(seconds: float, separator: str) -> str:
    millis = int(round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}{separator}{rest % 1000:03d}"


def render(record: dict[str, Any], fmt: str) -> str:
    """A transcript record as plain text, SubRip or WebVTT."""
    if fmt == "txt":
        return record["text"] + "\n"
    segments = record.get("segments") or [{"start": 0.0, "end": record.get("duration", 0.0), "text": record["text"]}]
    separator = "," if fmt == "srt" else "."
    blocks = []
    for number, segment in enumerate(segments, start=1):
        start = segment["start"] or 0.0
        end = segment["end"] if segment["end"] is not None else record.get("duration", start)
        timing = f"{_timestamp(start, separator)} --> {_timestamp(end, separator)}"
        blocks.append(f"{number}\n{timing}\n{segment['text']}\n" if fmt == "srt" else f"{timing}\n{segment['text']}\n")
    return ("WEBVTT\n\n" if fmt == "vtt" else "") + "\n".join(blocks)


def transcribe_records(
    speculator, paths: list[Path], *, language: str | None, task: str, timestamps: bool
) -> list[dict[str, Any]]:
    """One record per file: ``{"file", "duration", "text"[, "segments"]}``, or ``{"file", "error"}`` for a file
    that cannot be read as audio. Error records come first, then the transcripts in input order."""
    records: list[dict[str, Any]] = []
    clips, names = [], []
    for path in paths:
        try:
            clips.append(load_audio(path))
            names.append(path)
        except AudioError as error:
            records.append({"file": str(path), "error": str(error)})
    if not clips:
        return records
    results = speculator.transcribe(
        clips, sampling_rate=16_000, language=language, task=task, return_timestamps=timestamps, batch_size=len(clips)
    )
    for path, clip, result in zip(names, clips, results, strict=True):
        record: dict[str, Any] = {"file": str(path), "duration": round(len(clip) / 16_000, 3)}
        if isinstance(result, dict):
            record.update(result)
        else:
            record["text"] = result
        records.append(record)
    return records


def load_speculator(args: argparse.Namespace):
    """The speculator ``seq2spec transcribe`` runs (also built once per Ray actor)."""
    from seq2spec import Seq2SeqSpeculator

    dtype = torch_dtype(args.dtype)
    assistant = None if args.assistant == "none" else args.assistant
    if args.model:
        return Seq2SeqSpeculator(args.model, assistant, device=args.device, dtype=dtype, **speculation_changes(args))
    from seq2spec.default_models import load_whisper_base
    from seq2spec.whisper.draft import WHISPER_BASE_DRAFT_DIR, load_whisper_draft

    big, processor = load_whisper_base(device=args.device, dtype=dtype)
    if args.assistant is None and WHISPER_BASE_DRAFT_DIR.is_dir():
        assistant = load_whisper_draft(big)  # the shipped distilled draft, with its tuned options
    return Seq2SeqSpeculator(big, assistant, processor, **speculation_changes(args))


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    apply_threads(args)
    try:
        files = find_audio(args.inputs)
    except FileNotFoundError as error:
        print(f"seq2spec transcribe: {error}", file=sys.stderr)
        return 2
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    done = completed_files(out)
    todo = [f for f in files if str(f) not in done]
    durations = {f: duration_seconds(f) for f in todo}
    todo.sort(key=lambda f: durations[f])  # similar lengths share a batch
    already = len(files) - len(todo)
    print(f"{len(files)} audio files, {already} already done, {len(todo)} to transcribe", file=sys.stderr)
    if not todo:
        return 0
    try:
        speculator = load_speculator(args)
    except (FileNotFoundError, ValueError, OSError) as error:
        print(f"seq2spec transcribe: {error}", file=sys.stderr)
        return 2
    side_folder = out.with_name(out.stem + f"_{args.format}") if args.format != "jsonl" else None
    failures = 0
    audio_seconds = 0.0
    started = time.perf_counter()
    total_seconds = sum(durations.values())
    progress = tqdm(total=round(total_seconds, 1), unit="s", desc="audio", dynamic_ncols=True, file=sys.stderr)
    proposed = accepted = 0
    with open(out, "a", encoding="utf-8") as sink:

        def emit(record: dict[str, Any]) -> None:
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            sink.flush()
            os.fsync(sink.fileno())

        for start in range(0, len(todo), args.batch_size):
            batch = todo[start : start + args.batch_size]
            records = transcribe_records(
                speculator, batch, language=args.language, task=args.task, timestamps=args.timestamps
            )
            if any("text" in r for r in records):
                proposed += speculator.last_stats.proposed_draft_tokens
                accepted += speculator.last_stats.accepted_draft_tokens
            for record in records:
                emit(record)
                if "error" in record:
                    failures += 1
                    continue
                audio_seconds += record["duration"]
                if side_folder is not None:
                    target = side_folder / (Path(record["file"]).name + f".{args.format}")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(render(record, args.format), encoding="utf-8")
            elapsed = time.perf_counter() - started
            progress.update(round(sum(durations[p] for p in batch), 1))
            rtf = elapsed / max(audio_seconds, 1e-9)
            progress.set_postfix(files=f"{start + len(batch)}/{len(todo)}", rtf=f"{rtf:.3f}")
    progress.close()
    wall = time.perf_counter() - started
    acceptance = f"{accepted / proposed:.2f}" if proposed else "n/a (no draft)"
    print(
        f"done: {len(todo)} files ({failures} failed), {audio_seconds:.1f} s of audio in {wall:.1f} s, "
        f"real-time factor {wall / max(audio_seconds, 1e-9):.3f}, acceptance {acceptance}; results in {out}",
        file=sys.stderr,
    )
    return 1 if failures else 0


def add_parser(commands) -> argparse.ArgumentParser:
    transcribe = commands.add_parser(
        "transcribe",
        help="transcribe audio files or folders (recursively) into a JSONL file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    transcribe.add_argument("inputs", nargs="+", help="audio files and folders")
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
    transcribe.add_argument("--batch-size", type=positive_int, default=16)
    transcribe.add_argument("--format", choices=["jsonl", "txt", "srt", "vtt"], default="jsonl")
    add_runtime_flags(transcribe)
    add_speculation_flags(transcribe)
    add_ray_flags(transcribe)
    transcribe.set_defaults(run=run)
    return transcribe
