"""The ``seq2spec`` command: ``correct`` lines of text, or run a ``demo`` of the loop on built-in toy models."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _read_lines(paths: list[str], unreadable: list[str]) -> Iterator[str]:
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


def _chunks(lines: Iterator[str], size: int) -> Iterator[list[str]]:
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


def _speculator_options(args: argparse.Namespace) -> dict:
    return {
        "num_draft_tokens": args.num_draft_tokens,
        "adaptive": not args.fixed_draft_length,
        "acceptance": args.acceptance,
        "min_draft_confidence": args.min_draft_confidence,
    }


def add_speculation_flags(command: argparse.ArgumentParser, *, min_draft_confidence: float = 0.0) -> None:
    command.add_argument("--num-draft-tokens", type=int, default=5, help="starting draft length (default 5)")
    command.add_argument("--fixed-draft-length", action="store_true", help="do not adapt the draft length")
    command.add_argument("--acceptance", choices=["per-row", "batch-min"], default="per-row")
    command.add_argument(
        "--min-draft-confidence",
        type=float,
        default=min_draft_confidence,
        help="end a draft model's proposal once every row has proposed a token it gave less than this probability "
        f"(speed only, never the output; default {min_draft_confidence}{': off' if not min_draft_confidence else ''})",
    )


def build_corrector(args: argparse.Namespace):
    """The speculator ``seq2spec correct`` runs (also built once per Ray actor)."""
    from seq2spec import Seq2SeqSpeculator

    return Seq2SeqSpeculator(
        args.model,
        args.draft,
        input_copy=args.input_copy,
        device=args.device,
        dtype=DTYPES[args.dtype],
        **_speculator_options(args),
    )


def run_correct(args: argparse.Namespace) -> int:
    from seq2spec import SpeculationStats

    if args.ray:
        from seq2spec.ray_runner import run_correct_ray

        return run_correct_ray(args)
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
        for chunk in _chunks(_read_lines(args.inputs, unreadable), args.chunk_size):
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
    stats = total
    print(
        f"{lines_done} lines, {stats.generated_tokens} tokens, acceptance {stats.acceptance_rate:.2f}, "
        f"{stats.tokens_per_big_forward:.2f} tokens per big forward"
        + (f"; {len(unreadable)} unreadable input files skipped" if unreadable else ""),
        file=sys.stderr,
    )
    return 1 if unreadable else 0


def run_demo(args: argparse.Namespace) -> int:
    """Greedy versus seq2spec on a built-in random model pair: identical outputs, fewer big-model forwards."""
    from seq2spec import Seq2SeqSpeculator
    from seq2spec.toy_models import build_toy_pair, random_sources

    torch.set_num_threads(args.threads)
    big, draft = build_toy_pair(args.pair)
    input_ids, mask = random_sources(args.rows, seed=0, vocab_size=big.config.vocab_size, max_length=24)
    print(
        f"toy pair '{args.pair}': big {sum(p.numel() for p in big.parameters()) / 1e6:.1f}M parameters, "
        f"draft decoder {draft.config.num_decoder_layers} of {big.config.num_decoder_layers} layers, shared encoder"
    )
    start = time.perf_counter()
    expected = big.generate(input_ids, attention_mask=mask, max_new_tokens=args.max_new_tokens, do_sample=False)
    greedy_seconds = time.perf_counter() - start
    speculator = Seq2SeqSpeculator(big, draft, **_speculator_options(args))
    start = time.perf_counter()
    output = speculator.generate(input_ids, mask, max_new_tokens=args.max_new_tokens)
    seconds = time.perf_counter() - start
    identical = output.shape == expected.shape and torch.equal(output, expected)
    stats = speculator.last_stats
    print(
        f"batch of {args.rows}: greedy {greedy_seconds:.2f}s, seq2spec {seconds:.2f}s "
        f"(x{greedy_seconds / seconds:.2f}); outputs identical: {identical}"
    )
    print(
        f"acceptance {stats.acceptance_rate:.2f}, {stats.tokens_per_big_forward:.2f} tokens per big row-forward, "
        f"{stats.big_forwards} big decoder calls for {stats.generated_tokens} tokens"
    )
    return 0 if identical else 1


def run_convert_ct2(args: argparse.Namespace) -> int:
    from seq2spec.whisper_ct2 import Ct2FormatError, convert_ct2_whisper

    try:
        destination = convert_ct2_whisper(
            args.source, args.destination, files=args.parts or None, dtype=DTYPES[args.dtype]
        )
    except (FileNotFoundError, Ct2FormatError) as error:
        print(f"seq2spec convert-ct2: {error}", file=sys.stderr)
        return 2
    print(f"converted {args.source} -> {destination}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from seq2spec.ray_runner import add_ray_flags

    parser = argparse.ArgumentParser(prog="seq2spec", description="Batched speculative greedy decoding.")
    commands = parser.add_subparsers(dest="command", required=True)

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
        help="draft model: hub name or local path, or 'input-copy' to copy from each line instead "
        "(default: the shipped draft without --model, else none)",
    )
    correct.add_argument(
        "--input-copy",
        action="store_true",
        help="copy candidates from the input where it aligns and ask the draft model elsewhere",
    )
    correct.add_argument("--prefix", help="text put before every line, e.g. 'grammar: '")
    correct.add_argument("--batch-size", type=int, default=32)
    correct.add_argument(
        "--chunk-size", type=int, default=1024, help="lines sorted, corrected and written together (default 1024)"
    )
    correct.add_argument("--max-new-tokens", type=int)
    correct.add_argument("--truncate", action="store_true", help="cut inputs longer than the model accepts")
    correct.add_argument("--device", default="cpu")
    correct.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    correct.add_argument("--out", type=Path, help="output file (default: standard output); a directory with --ray")
    add_speculation_flags(correct)
    add_ray_flags(correct)
    correct.set_defaults(run=run_correct)

    from seq2spec.transcribe_cli import add_parser as add_transcribe

    add_transcribe(commands)

    convert = commands.add_parser(
        "convert-ct2",
        help="convert a CTranslate2 (faster-whisper) Whisper directory to a transformers one",
        description="Convert SOURCE (model.bin or model.bin.part*, config.json, tokenizer.json) into a "
        "WhisperForConditionalGeneration directory with its processor and generation config.",
    )
    convert.add_argument("source", type=Path)
    convert.add_argument("destination", type=Path)
    convert.add_argument("--parts", nargs="+", type=Path, help="model.bin parts in order, when not in SOURCE")
    convert.add_argument("--dtype", choices=sorted(DTYPES), default="float32", help="dtype of the saved weights")
    convert.set_defaults(run=run_convert_ct2)

    demo = commands.add_parser("demo", help="greedy versus seq2spec on a built-in random model pair")
    demo.add_argument("--pair", choices=["small", "large"], default="small")
    demo.add_argument("--rows", type=int, default=16)
    demo.add_argument("--max-new-tokens", type=int, default=64)
    demo.add_argument("--threads", type=int, default=2)
    add_speculation_flags(demo)
    demo.set_defaults(run=run_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
