"""``seq2spec correct``: one corrected line per input line, from files or standard input."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from seq2spec.commands.flags import (
    add_ray_flags,
    add_runtime_flags,
    add_speculation_flags,
    apply_threads,
    positive_int,
    speculation_changes,
    torch_dtype,
)


def read_lines(paths: list[str], unreadable: list[str]) -> Iterator[str]:
    """Lines of the inputs in order; a file that cannot be read as UTF-8 text is reported, noted in ``unreadable``
    and skipped."""
    if not paths:
        yield from (line.rstrip("\n") for line in sys.stdin)
        return
    for path in paths:
        if path == "-":
            yield from (line.rstrip("\n") for line in sys.stdin)
            continue
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            print(f"seq2spec correct: cannot read {path} as UTF-8 text: {error}", file=sys.stderr)
            unreadable.append(path)
            continue
        yield from lines


def chunks(lines: Iterator[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def one_line(text: str) -> str:
    """Output keeps one line per input line: line breaks inside a correction become spaces."""
    return " ".join(text.splitlines()) if text else text


def build_corrector(args: argparse.Namespace):
    """The speculator ``seq2spec correct`` runs (also built once per Ray actor)."""
    from seq2spec import Seq2SeqSpeculator

    draft = {} if args.draft is None else {"draft": None if args.draft == "none" else args.draft}
    return Seq2SeqSpeculator(
        args.model,
        **draft,
        device=args.device,
        dtype=torch_dtype(args.dtype),
        **speculation_changes(args),
    )


def run(args: argparse.Namespace) -> int:
    from seq2spec import SpeculationStats

    apply_threads(args)
    try:
        speculator = build_corrector(args)
    except (FileNotFoundError, ValueError) as error:  # no --model and no shipped weights; an unusable pair
        print(f"seq2spec correct: {error}", file=sys.stderr)
        return 2
    # Chunks are corrected and written in input order, flushed as they finish: a failure keeps what was written.
    output = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    total = SpeculationStats()
    lines_done = 0
    unreadable: list[str] = []
    try:
        for chunk in chunks(read_lines(args.inputs, unreadable), args.chunk_size):
            corrected = speculator.correct(
                chunk,
                batch_size=args.batch_size,
                max_new_tokens=args.max_new_tokens,
                prefix=args.prefix,
                truncate=args.truncate,
            )
            output.write("".join(one_line(line) + "\n" for line in corrected))
            output.flush()
            total.merge(speculator.last_stats)
            lines_done += len(chunk)
    finally:
        if args.out:
            output.close()
    print(
        f"{lines_done} lines, {total.generated_tokens} tokens, acceptance {total.acceptance_rate:.2f}, "
        f"{total.tokens_per_big_forward:.2f} tokens per big forward"
        + (f"; {len(unreadable)} unreadable input files skipped" if unreadable else ""),
        file=sys.stderr,
    )
    return 1 if unreadable else 0


def add_parser(commands) -> argparse.ArgumentParser:
    correct = commands.add_parser(
        "correct",
        help="correct lines of text from files or standard input",
        description="Correct each input line; writes one output line per input line (line breaks inside an "
        "output become spaces).",
    )
    correct.add_argument("inputs", nargs="*", help="text files, one input per line ('-' or none: standard input)")
    correct.add_argument("--model", help="big model: hub name or local path (default: the shipped speller)")
    correct.add_argument(
        "--draft",
        help="draft model: hub name or local path, 'input-copy' to copy from each line instead, or 'none' "
        "(default: the shipped draft without --model, else none)",
    )
    correct.add_argument("--prefix", help="text put before every line, e.g. 'grammar: '")
    correct.add_argument("--batch-size", type=positive_int, default=32)
    correct.add_argument(
        "--chunk-size",
        type=positive_int,
        default=1024,
        help="lines sorted, corrected and written together (default 1024)",
    )
    correct.add_argument("--max-new-tokens", type=positive_int)
    correct.add_argument("--truncate", action="store_true", help="cut inputs longer than the model accepts")
    correct.add_argument("--out", type=Path, help="output file (default: standard output); a directory with --ray")
    add_runtime_flags(correct)
    add_speculation_flags(correct)
    add_ray_flags(correct)
    correct.set_defaults(run=run)
    return correct
