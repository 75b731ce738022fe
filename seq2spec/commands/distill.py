"""``seq2spec distill-draft``: a draft for a model that has none, made of its own decoder layers and distilled on the
user's own lines (``seq2spec.drafts.own_layers``, ``seq2spec.drafts.distill``).

The big model labels every line with its greedy output; the draft (copies of ``--layers`` of the big decoder, reading
the big model's encoder output) learns to propose those tokens. OUT receives the draft's layers (megabytes), which
``--draft OUT`` of ``seq2spec correct`` and ``Seq2SeqSpeculator(big, OUT)`` take, and ``distill_stats.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from seq2spec.commands.flags import DTYPE_NAMES, add_runtime_flags, apply_process_settings, positive_int, torch_dtype

STATS_FILE = "distill_stats.json"
MIN_LINES = 8


def layer_list(text: str) -> tuple[int, ...]:
    """``--layers``: comma-separated decoder layer indices (negative from the end), e.g. ``0,-1``."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give layer numbers separated by commas, e.g. 0,-1") from None


def share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a share in [0, 1), e.g. 0.1")
    return value


def read_texts(inputs: list[str], prefix: str) -> list[str]:
    """The non-empty lines of the inputs (``-``: standard input), each after ``prefix``."""
    texts = []
    for name in inputs:
        if name == "-":
            content = sys.stdin.read()
        else:
            try:
                content = Path(name).read_text(encoding="utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"cannot read {name} as UTF-8 text ({error.reason})") from None
        texts += [prefix + line.strip() for line in content.splitlines() if line.strip()]
    if len(texts) < MIN_LINES:
        raise ValueError(f"distillation needs at least {MIN_LINES} non-empty lines of input; got {len(texts)}")
    return texts


def check_destination(out: Path) -> None:
    """OUT is new, empty, or a draft folder written before (replaced)."""
    from seq2spec.drafts.own_layers import is_layer_draft_folder

    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not is_layer_draft_folder(out))):
        raise ValueError(f"--out {out}: exists and is not an empty folder or a draft folder written before")


def run(args: argparse.Namespace) -> int:
    apply_process_settings(args)
    try:
        check_destination(args.out)
        texts = sorted(read_texts(args.inputs or ["-"], args.prefix or ""), key=len)
        stats = distill(args, texts)
    except (ValueError, TypeError, OSError) as error:
        print(f"seq2spec distill-draft: {error}", file=sys.stderr)
        return 2
    (args.out / STATS_FILE).write_text(json.dumps(asdict(stats), indent=1) + "\n", encoding="utf-8")
    before, after = stats.agreement_before, stats.agreement_after
    if after is not None:
        print(f"agreement with the big model's greedy tokens on held-out lines: {before:.3f} -> {after:.3f}")
    print(f"{stats.steps} steps on {stats.labelled_tokens} labelled tokens; draft saved to {args.out}")
    print(f"use it: seq2spec correct --model {args.model} --draft {args.out}")
    return 0


def distill(args: argparse.Namespace, texts: list[str]):
    from seq2spec.drafts.distill import DistillOptions, distill_layer_draft
    from seq2spec.drafts.own_layers import layer_draft, save_layer_draft
    from seq2spec.pairing import load_dtype, load_model, load_tokenizer

    options = DistillOptions(
        steps=args.steps,
        learning_rate=args.learning_rate,
        max_new_tokens=args.max_new_tokens,
        held_out=args.held_out,
    )
    dtype = torch_dtype(args.dtype)
    tokenizer = load_tokenizer(args.model)
    big = load_model(args.model, "model", **load_dtype(args.device, dtype)).to(args.device)
    draft = layer_draft(big, args.layers)
    limit = {"truncation": True} if getattr(tokenizer, "model_max_length", 0) < 1_000_000 else {}
    batches = [
        dict(tokenizer(texts[start : start + args.batch_size], return_tensors="pt", padding=True, **limit))
        for start in range(0, len(texts), args.batch_size)
    ]
    print(f"labelling {len(texts)} lines with {args.model}'s greedy output, then {args.steps} steps", file=sys.stderr)
    stats = distill_layer_draft(big, draft, batches, options, progress=lambda text: print(text, file=sys.stderr))
    save_layer_draft(draft, args.out)
    return stats


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "distill-draft",
        help="make a draft for a model from its own decoder layers, distilled on your lines",
        description=__doc__.split("\n\n", 1)[1].replace("``", ""),
    )
    parser.add_argument("inputs", nargs="*", help="text files of the model's inputs, one per line ('-' or none: stdin)")
    parser.add_argument("--model", required=True, help="the big model: hub name or local path")
    parser.add_argument("--out", type=Path, required=True, help="folder for the draft (new, empty, or a draft's)")
    parser.add_argument(
        "--layers", type=layer_list, default=(0, -1), help="big decoder layers the draft copies (default 0,-1)"
    )
    parser.add_argument("--prefix", help="text put before every line, as the model is run (e.g. 'grammar: ')")
    parser.add_argument("--steps", type=positive_int, default=600, help="training steps (default 600)")
    parser.add_argument("--batch-size", type=positive_int, default=16, help="lines per batch (default 16)")
    parser.add_argument("--learning-rate", type=float, default=5e-4, help="AdamW's learning rate (default 5e-4)")
    parser.add_argument(
        "--max-new-tokens", type=positive_int, default=128, help="most tokens the big model writes per line (128)"
    )
    parser.add_argument("--held-out", type=share, default=0.1, help="share of the batches to measure on (0.1)")
    add_runtime_flags(parser, dtypes=DTYPE_NAMES)
    parser.set_defaults(run=run)
    return parser
