"""Settings of ``correct``'s text steps (``SpellingSettings``), chosen on validation sentences.

The shipped speller through ``correct`` once per variant of its settings, on validation sets that no evaluation
set contains: ``data/spelling_real_validation.jsonl`` (technical and Unicode-rich lines, ``make_real_text_sets.py``)
and, with ``--work-dir``, the corpus sentences ``train_speller.py --stage validate`` scores (``--validation-size``
corrupted and as many clean). For each variant and set: typos fixed, correct words broken, clean sentences changed
and lines fully right, against the shipped settings; the net is typos fixed minus correct words broken.

    python recipes/tune_text_steps.py --work-dir runs/speller \\
        --variant keep_unknown_words=false --variant check_words=true,word_check_margin=4
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metrics import real_text_counts, typo_counts  # noqa: E402

from seq2spec import Seq2SeqSpeculator  # noqa: E402
from seq2spec.memory import retain_freed_memory  # noqa: E402
from seq2spec.spelling.settings import SpellingSettings  # noqa: E402

REAL_VALIDATION = Path(__file__).resolve().parent / "data" / "spelling_real_validation.jsonl"


def variant(text: str) -> dict:
    """``name=value,name=value`` as settings changes (true/false, numbers)."""
    changes = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        if name not in SpellingSettings.field_names():
            raise argparse.ArgumentTypeError(f"unknown setting {name!r}; known: {SpellingSettings.field_names()}")
        changes[name] = {"true": True, "false": False}.get(value.lower(), None)
        if changes[name] is None:
            changes[name] = float(value)
    return changes


def validation_sets(args) -> dict[str, tuple[list[str], list[str]]]:
    rows = [json.loads(line) for line in REAL_VALIDATION.read_text(encoding="utf-8").splitlines()]
    sets = {"real text": ([r["source"] for r in rows], [r["reference"] for r in rows])}
    if args.work_dir:  # the corpus sentences (and the broader text's, where the work directory has it)
        from tune_capital_check import validation_texts

        sets.update(validation_texts(args.work_dir, args.seed, args.eval_size, args.size))
    return sets


def scores(sources: list[str], references: list[str], outputs: list[str]) -> tuple[int, int, int, int]:
    typos, real = typo_counts(sources, references, outputs), real_text_counts(sources, references, outputs)
    return typos.fixed, typos.broken_words, typos.clean_sentences - typos.clean_unchanged, real.lines_right


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", type=variant, action="append", default=[], help="name=value,... (repeatable)")
    parser.add_argument("--work-dir", type=Path, help="the speller's training work directory (corpus validation)")
    parser.add_argument("--seed", type=int, default=0, help="train_speller.py's --seed")
    parser.add_argument("--eval-size", type=int, default=400, help="train_speller.py's --eval-size")
    parser.add_argument("--size", type=int, default=700, help="train_speller.py's --validation-size")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    retain_freed_memory()
    sets = validation_sets(args)
    speculator = Seq2SeqSpeculator()
    names = list(sets)
    base = {name: scores(*sets[name], speculator.correct(sets[name][0])) for name in names}
    for name in names:
        fixed, broken, changed, right = base[name]
        print(
            f"{name}: {len(sets[name][0])} lines; shipped settings: {fixed} typos fixed, {broken} correct words "
            f"broken, {changed} clean sentences changed, {right} lines fully right",
            file=sys.stderr,
        )
    columns = " | ".join(f"{name}: fixed / broken / clean changed / lines right" for name in names)
    print(f"| variant | {columns} | net |")
    print("|---|" + "---:|" * (len(names) + 1))
    for changes in args.variant:
        cells, net = [], 0
        for name in names:
            fixed, broken, changed, right = scores(*sets[name], speculator.correct(sets[name][0], **changes))
            b = base[name]
            cells.append(f"{fixed - b[0]:+d} / {broken - b[1]:+d} / {changed - b[2]:+d} / {right - b[3]:+d}")
            net += (fixed - b[0]) - (broken - b[1])
        label = ", ".join(f"{key}={value}" for key, value in changes.items())
        print(f"| {label} | {' | '.join(cells)} | {net:+d} |", flush=True)


if __name__ == "__main__":
    main()
