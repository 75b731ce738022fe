"""The margins of ``correct``'s capital check (``seq2spec.spelling.capital_check``), chosen on validation sentences.

The shipped speller through ``correct`` with its defaults, once without the check and once per pair of margins
(within a sentence; at its start, the same or one of ``--initial-margins`` above it), on the
held-out sentences that ``train_speller.py --stage validate`` scores and neither evaluation set contains: corpus
sentences with the training noise (``--validation-size`` corrupted and as many clean) and the broader text's with
human-like noise (up to 400 of each). For each pair: typos fixed (capitalised ones apart), correct words broken and
clean sentences changed, against no check. The default pair is the one with the most typos fixed net of correct
words broken (a clean sentence changed breaks a word too), summed over both sets; ties go to the smaller margins.

    python recipes/tune_capital_check.py --work-dir runs/speller_text3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_speller  # noqa: E402
from metrics import typo_counts  # noqa: E402

from seq2spec import Seq2SeqSpeculator  # noqa: E402
from seq2spec.memory import retain_freed_memory  # noqa: E402


def validation_texts(work_dir: Path, seed: int, eval_size: int, size: int) -> dict[str, tuple[list[str], list[str]]]:
    """{set name: (sources, references)}: corrupted sentences, then clean ones (source == reference)."""
    typos = train_speller.load_typos(work_dir)
    _, held_out = train_speller.split_corpus(work_dir)
    sets = {"corpus": train_speller.validation_sets(held_out, typos, seed + 7, eval_size, size)}
    if (work_dir / train_speller.TEXT_FILE).exists():
        sets["broader text"] = train_speller.text_validation_sets(work_dir, typos, seed + 7, min(size, 400))
    return {
        name: ([s for s, _ in pairs] + clean, [r for _, r in pairs] + clean) for name, (pairs, clean) in sets.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, required=True, help="the speller's training work directory")
    parser.add_argument("--margins", type=float, nargs="+", default=[4, 5, 6, 6.5, 7, 8])
    parser.add_argument(
        "--initial-margins",
        type=float,
        nargs="*",
        default=[9, 10, 11, 12],
        help="margins for a word that starts a sentence, each tried with every smaller --margins value",
    )
    parser.add_argument("--seed", type=int, default=0, help="train_speller.py's --seed")
    parser.add_argument("--eval-size", type=int, default=400, help="train_speller.py's --eval-size")
    parser.add_argument("--validation-size", type=int, default=700, help="train_speller.py's --validation-size")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    retain_freed_memory()
    sets = validation_texts(args.work_dir, args.seed, args.eval_size, args.validation_size)
    speculator = Seq2SeqSpeculator()
    pairs = sorted(
        {(margin, margin) for margin in args.margins}
        | {(margin, initial) for margin in args.margins for initial in args.initial_margins if initial > margin}
    )
    rows = {}
    for name, (sources, references) in sets.items():
        base = typo_counts(sources, references, speculator.correct(sources, check_capitals=False))
        print(
            f"{name}: {len(sources)} sentences, {base.typos} typos ({base.capitalised_typos} capitalised), "
            f"{base.clean_sentences} clean; without the check {base.fixed} fixed ({base.capitalised_fixed} "
            f"capitalised), {base.broken_words} correct words broken, {base.clean_unchanged} clean unchanged",
            file=sys.stderr,
        )
        for margin, initial in pairs:
            outputs = speculator.correct(sources, capital_check_margin=margin, capital_check_initial_margin=initial)
            counts = typo_counts(sources, references, outputs)
            rows.setdefault((margin, initial), {})[name] = (
                counts.fixed - base.fixed,
                counts.capitalised_fixed - base.capitalised_fixed,
                counts.broken_words - base.broken_words,
                base.clean_unchanged - counts.clean_unchanged,
            )
    names = list(sets)
    columns = " | ".join(f"{name}: fixed (capitalised) / broken / clean changed" for name in names)
    print(f"| margin, nats | at a sentence's start | {columns} | net |")
    print("|---:|---:|" + "---:|" * (len(names) + 1))
    nets = {}
    for pair in pairs:
        cells = [rows[pair][n] for n in names]
        nets[pair] = sum(fixed - broken for fixed, _, broken, _ in cells)
        text = " | ".join(f"+{f} ({c}) / +{b} / {k}" for f, c, b, k in cells)
        print(f"| {pair[0]:g} | {pair[1]:g} | {text} | {nets[pair]:+d} |")
    best = max(pairs, key=lambda pair: (nets[pair], -pair[0], -pair[1]))
    print(
        f"\nmost typos fixed net of correct words broken: margin {best[0]:g}, {best[1]:g} at a sentence's start "
        f"({nets[best]:+d})"
    )


if __name__ == "__main__":
    main()
