"""seq2spec over a Ray cluster: ``seq2spec transcribe --ray`` and ``seq2spec correct --ray``.

Inputs become a Ray Dataset (one row per audio file, or per text line); ``map_batches`` runs an actor class that
loads the big and draft models once per actor and returns one record per row, with unreadable inputs as error
records; Ray's writers append the records to ``--out`` (a directory of JSONL or Parquet files). Before a run, the
records already in ``--out`` are read and their inputs left out, so a rerun resumes; a file cut short by a killed
run is repaired first (JSONL: the partial last line is cut; Parquet: an unreadable file is set aside as
``*.corrupt``), and only the inputs it lost are done again.

Needs ``pip install "seq2spec[ray]"``. ``--ray-address`` joins an existing cluster (``auto``, or ``ray://host:10001``);
without it a local Ray instance is started.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from seq2spec.commands.correct import Fences, file_lines
from seq2spec.commands.outputs import JsonlRecords, OutputError
from seq2spec.options import SpeculationOptions
from seq2spec.spelling.settings import SpellingSettings

RAY_HINT = 'Ray is not installed: pip install "seq2spec[ray]"'
# what every actor needs to build its speculator the way the local command would (and, transcribing, the command's
# TranscriptionRequest: actor_options adds it)
TRANSCRIBE_KEYS = ("model", "assistant", "language_draft", "device", "dtype")
CORRECT_KEYS = (
    "model",
    "draft",
    "device",
    "dtype",
    "batch_size",
    "max_new_tokens",
    "prefix",
    "truncate",
    *(setting.name for setting in SpellingSettings.flag_fields()),
)


def _ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as error:
        raise RuntimeError(RAY_HINT) from error
    return ray


# ----------------------------------------------------------------------------- results already written


def read_records(out: Path) -> list[dict[str, Any]]:
    """Every record in an output directory (JSONL ``*.json`` files or ``*.parquet``), null fields dropped.

    Repairs what a killed run can leave: a JSONL record cut off at the end of a file is removed and a corrupt line
    skipped; a Parquet file that cannot be read is renamed ``*.corrupt``. A JSONL file in ``out`` that holds no
    seq2spec records is refused (``OutputError``), never changed."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise NotADirectoryError(f"--out {out} must be a directory with --ray (Ray writes one file per block)")
    records: list[dict[str, Any]] = []
    for path in sorted(out.iterdir()):
        if path.suffix in (".json", ".jsonl"):
            rows = JsonlRecords(path).read()
        elif path.suffix == ".parquet":
            import pyarrow.parquet as pq

            try:
                rows = pq.read_table(path).to_pylist()
            except Exception:  # noqa: BLE001 - any unreadable file is set aside and its inputs redone
                path.rename(path.with_suffix(".parquet.corrupt"))
                continue
        else:
            continue
        records += [{k: v for k, v in row.items() if v is not None} for row in rows]
    return records


def _start_ray(address: str | None):
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, include_dashboard=False)
    return ray


def _write(dataset, out: Path, fmt: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        dataset.write_parquet(str(out))
    else:
        dataset.write_json(str(out), force_ascii=False)


def _actor_resources(args: argparse.Namespace) -> dict[str, Any]:
    gpus = args.gpus_per_actor if args.gpus_per_actor is not None else (1.0 if args.device.startswith("cuda") else 0)
    return {"concurrency": args.num_actors, "num_cpus": args.cpus_per_actor, "num_gpus": gpus}


def _columns(records: list[dict[str, Any]], names: tuple[str, ...]):
    """A block of records as an Arrow table (absent fields as nulls): Ray writes it as JSONL or Parquet."""
    import pyarrow

    return pyarrow.Table.from_pydict({name: [record.get(name) for record in records] for name in names})


# ----------------------------------------------------------------------------- transcription


TRANSCRIPT_COLUMNS = ("file", "duration", "text", "error")


class TranscribeActor:
    """Loads the Whisper pair once; turns batches of ``{"file"}`` rows into transcript or error records."""

    def __init__(self, options: dict[str, Any]):
        import torch

        from seq2spec.commands.transcribe import load_speculator

        torch.set_num_threads(max(1, int(options.pop("threads"))))
        self.request = options.pop("request")  # the command's TranscriptionRequest
        self.speculator = load_speculator(argparse.Namespace(**options))

    def __call__(self, batch: dict):
        from seq2spec.whisper.records import records_one_by_one_on_failure

        paths = [Path(name) for name in batch["file"]]
        request = self.request
        languages = {path: str(code) or None for path, code in zip(paths, batch["language"], strict=True)}
        records = records_one_by_one_on_failure(self.speculator, paths, request, languages=languages)
        timed = request.return_timestamps or request.word_timestamps
        extra = (("segments",) if timed else ()) + (("words",) if request.word_timestamps else ())
        return _columns(records, TRANSCRIPT_COLUMNS + extra)


def actor_options(args: argparse.Namespace, keys: tuple[str, ...]) -> dict[str, Any]:
    """What an actor builds its speculator from: the command's settings and every speculation option (unset ones
    as None, so that the draft's tuned options apply there as they would locally)."""
    options = {key: getattr(args, key) for key in (*keys, *SpeculationOptions.field_names())}
    options["threads"] = args.threads_per_actor or args.cpus_per_actor
    if keys == TRANSCRIBE_KEYS:
        from seq2spec.commands.transcribe import request_of

        options["request"] = request_of(args)
    return options


def run_transcribe(args: argparse.Namespace) -> int:
    from seq2spec.whisper.audio import duration_seconds, find_audio

    if args.format != "jsonl":
        print("seq2spec transcribe --ray: --format is for local runs; use --out-format", file=sys.stderr)
        return 2
    from seq2spec.commands.transcribe import read_language_map, same_file
    from seq2spec.whisper.languages import whisper_language

    try:
        if args.language is not None:
            args.language = whisper_language(args.language, "--language")
        languages = read_language_map(args.language_map) if args.language_map is not None else {}
        ray = _ray()
        files = find_audio(args.inputs)
        done = {r["file"] for r in read_records(args.out)}
    except (RuntimeError, FileNotFoundError, NotADirectoryError, OutputError, ValueError) as error:
        print(f"seq2spec transcribe: {error}", file=sys.stderr)
        return 2
    todo = [str(f) for f in files if str(f) not in done]
    print(
        f"{len(files)} audio files, {len(files) - len(todo)} already done, {len(todo)} to transcribe", file=sys.stderr
    )
    if not todo:
        return 0
    _start_ray(args.ray_address)
    options = actor_options(args, TRANSCRIBE_KEYS)
    started = time.perf_counter()
    rows = [
        {"file": f, "seconds": duration_seconds(Path(f)), "language": languages.get(same_file(f), args.language) or ""}
        for f in todo
    ]  # "": detected
    rows.sort(key=lambda r: r["seconds"])
    dataset = ray.data.from_items(rows).map_batches(
        TranscribeActor,
        fn_constructor_kwargs={"options": options},
        batch_size=args.batch_size,
        batch_format="numpy",
        **_actor_resources(args),
    )
    _write(dataset, args.out, args.out_format)
    wall = time.perf_counter() - started
    wanted = set(todo)
    written = [r for r in read_records(args.out) if r["file"] in wanted]
    failures = sum("error" in r for r in written)
    audio = sum(r.get("duration", 0.0) for r in written)
    print(
        f"done: {len(written)} files ({failures} failed), {audio:.1f} s of audio in {wall:.1f} s, "
        f"real-time factor {wall / max(audio, 1e-9):.3f}; results in {args.out}",
        file=sys.stderr,
    )
    return 1 if failures else 0


# ----------------------------------------------------------------------------- correction


CORRECTION_COLUMNS = ("file", "line", "source", "text", "error")


class CorrectActor:
    """Loads the correction pair once; turns batches of ``{"file", "line", "source"}`` rows into corrections."""

    def __init__(self, options: dict[str, Any]):
        import torch

        from seq2spec.commands.correct import build_corrector

        torch.set_num_threads(max(1, int(options.pop("threads"))))
        self.args = argparse.Namespace(**options)
        self.speculator = build_corrector(self.args)

    def _correct(self, sources: list[str]) -> list[str]:
        from seq2spec.commands.correct import correct_arguments, one_line

        corrected = self.speculator.correct(sources, **correct_arguments(self.args))
        return [one_line(text) for text in corrected]

    def __call__(self, batch: dict):
        rows = [
            {"file": str(f), "line": int(n), "source": str(s)}
            for f, n, s in zip(batch["file"], batch["line"], batch["source"], strict=True)
        ]
        try:
            for row, text in zip(rows, self._correct([r["source"] for r in rows]), strict=True):
                row["text"] = text
        except Exception:  # noqa: BLE001 - one bad line must not stop the job: retry line by line
            for row in rows:
                try:
                    row["text"] = self._correct([row["source"]])[0]
                except Exception as error:  # noqa: BLE001
                    row["error"] = f"{type(error).__name__}: {error}"
        return _columns(rows, CORRECTION_COLUMNS)


def read_text_inputs(paths: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``({"file", "line", "source", "code"} rows, error records for files that cannot be read as UTF-8 text)``; a
    line of a fenced code block has ``"code": True`` and is written as read."""
    rows, errors = [], []
    for name in paths:
        try:
            lines = list(file_lines(name))
        except (OSError, UnicodeDecodeError) as error:
            errors.append({"file": name, "line": -1, "error": f"cannot read {name} as UTF-8 text: {error}"})
            continue
        fences = Fences()
        rows += [
            {"file": name, "line": number, "source": line, "code": fences.code(line)}
            for number, line in enumerate(lines)
        ]
    return rows, errors


def run_correct(args: argparse.Namespace) -> int:
    if not args.inputs or "-" in args.inputs:
        print(
            "seq2spec correct --ray: name input files (standard input cannot be split across a cluster)",
            file=sys.stderr,
        )
        return 2
    if args.out is None:
        print("seq2spec correct --ray: --out DIRECTORY is required", file=sys.stderr)
        return 2
    try:
        ray = _ray()
        existing = read_records(args.out)
    except (RuntimeError, NotADirectoryError, OutputError) as error:
        print(f"seq2spec correct: {error}", file=sys.stderr)
        return 2
    done = {(r["file"], r["line"]) for r in existing}
    rows, unreadable = read_text_inputs(args.inputs)
    todo = [r for r in rows if (r["file"], r["line"]) not in done]
    new_errors = [e for e in unreadable if (e["file"], e["line"]) not in done]
    print(f"{len(rows)} lines, {len(rows) - len(todo)} already done, {len(todo)} to correct", file=sys.stderr)
    if not todo and not new_errors:
        return 1 if any("error" in r for r in existing) else 0
    _start_ray(args.ray_address)
    started = time.perf_counter()
    code = [{**row, "text": row["source"]} for row in todo if row["code"]]  # fenced code, written as read
    todo = [row for row in todo if not row["code"]]
    if new_errors or code:
        _write(ray.data.from_items([_row(e) for e in new_errors + code]), args.out, args.out_format)
    if todo:
        options = actor_options(args, CORRECT_KEYS)
        dataset = ray.data.from_items(todo).map_batches(
            CorrectActor,
            fn_constructor_kwargs={"options": options},
            batch_size=args.chunk_size,
            batch_format="numpy",
            **_actor_resources(args),
        )
        _write(dataset, args.out, args.out_format)
    wall = time.perf_counter() - started
    failures = sum("error" in r for r in read_records(args.out))
    print(
        f"done: {len(todo)} lines in {wall:.1f} s, {failures} errors recorded; results in {args.out}", file=sys.stderr
    )
    return 1 if failures else 0


def _row(record: dict[str, Any]) -> dict[str, Any]:
    return {name: record.get(name) for name in CORRECTION_COLUMNS}
