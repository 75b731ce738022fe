"""Candidates copied from a spell-checked source (``spellcheck_copy``): acceptance and speed against plain input
copy and the draft model, on held-out sets.

A corrector's output is mostly its input, so copying the source proposes many tokens for free; it stops at every
typo, where the big model writes the fix instead. With ``spellcheck_copy`` the copy comes from the source after a
classical word-by-word check (``seq2spec.spelling.classical``: symspellpy's English dictionary, each unknown word
replaced by its closest suggestion, case and punctuation kept), so where the checker guessed the model's fix, the
copy runs on through it. The big model still decides every token: the output is its greedy output whatever the
checker suggests.

The recipe decodes the same pairs with ``big.generate`` (greedy), the shipped draft, input copy, spell-checked copy
and spell-checked copy with the draft, at each batch size, one interleaved run, and reports wall time, speedup,
tokens per big row-forward, the share of copied tokens kept and whether every output equals greedy's. Texts longer
than the speller's sentence limit are corrected sentence by sentence, as ``seq2spec correct`` does.

    python recipes/spellcheck_copy.py                                           # the in-domain held-out set
    python recipes/spellcheck_copy.py recipes/data/spelling_heldout_ood.tsv --name spellcheck_copy_ood
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from eval_spelling import DEFAULT_DATA, decode_greedy, load_pairs

from seq2spec import Seq2SeqSpeculator
from seq2spec.default_models import SPELLER_SENTENCE_CHARS, load_speller
from seq2spec.memory import retain_freed_memory

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"  # where reports go by default


def measure(name: str, decode: Callable[[], tuple[list[str], object]], greedy: list[str] | None) -> dict:
    started = time.perf_counter()
    outputs, stats = decode()
    seconds = time.perf_counter() - started
    row = {"method": name, "seconds": seconds, "outputs": outputs}
    if stats is not None:
        row.update(
            tokens_per_big_forward=stats.tokens_per_big_forward,
            copy_kept=stats.accepted_copy_tokens / stats.proposed_copy_tokens if stats.proposed_copy_tokens else None,
        )
    if greedy is not None:
        row["identical"] = outputs == greedy
    return row


def markdown(report: dict) -> str:
    lines = [
        f"# Spell-checked copy: {report['data']}, {report['pairs']} pairs\n",
        f"{report['machine']}; one interleaved run per batch size\n",
        "| batch | method | wall s | speedup vs greedy | tokens per big row-forward | copied tokens kept | identical |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for batch_size, rows in report["results"].items():
        greedy = next(row["seconds"] for row in rows if row["method"] == "greedy")
        for row in rows:
            tokens = row.get("tokens_per_big_forward")
            kept = row.get("copy_kept")
            lines.append(
                f"| {batch_size} | {row['method']} | {row['seconds']:.2f} | {greedy / row['seconds']:.2f} | "
                f"{'-' if tokens is None else f'{tokens:.2f}'} | {'-' if kept is None else f'{kept:.2f}'} | "
                f"{'-' if 'identical' not in row else ('yes' if row['identical'] else 'NO')} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--limit", type=int, default=400, help="first N pairs (default %(default)s)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="spellcheck_copy")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    retain_freed_memory()

    sources, _ = load_pairs(args.data, "source", "reference", args.limit)
    big, small, tokenizer = load_speller()
    speculators = {
        "seq2spec draft": Seq2SeqSpeculator(big, small, tokenizer),
        "seq2spec input copy": Seq2SeqSpeculator(big, "input-copy", tokenizer),
        "seq2spec spell-checked copy": Seq2SeqSpeculator(big, "input-copy", tokenizer, spellcheck_copy=True),
        "seq2spec spell-checked copy+draft": Seq2SeqSpeculator(
            big, small, tokenizer, input_copy=True, spellcheck_copy=True
        ),
    }
    split = SPELLER_SENTENCE_CHARS
    results: dict[int, list[dict]] = {}
    failed = False
    for batch_size in args.batch_sizes:
        for speculator in speculators.values():  # warm-up (and the spell check's dictionary)
            speculator.correct(sources[:8], batch_size=batch_size, split_longer_than=split)
        greedy_row = measure(
            "greedy",
            lambda b=batch_size: (decode_greedy(speculators["seq2spec draft"], sources, b, None, split), None),
            None,
        )
        rows = [greedy_row]
        for name, speculator in speculators.items():

            def decode(s=speculator, b=batch_size):
                return s.correct(sources, batch_size=b, split_longer_than=split), s.last_stats

            rows.append(measure(name, decode, greedy_row["outputs"]))
        failed |= not all(row.get("identical", True) for row in rows)
        results[batch_size] = [{k: v for k, v in row.items() if k != "outputs"} for row in rows]
        partial = {
            "data": args.data.name,
            "pairs": len(sources),
            "machine": "",
            "results": {batch_size: results[batch_size]},
        }
        print(markdown(partial), file=sys.stderr)

    machine = f"{torch.get_num_threads()} threads, torch {torch.__version__}"
    report = {"data": args.data.name, "pairs": len(sources), "machine": machine, "results": results}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(report, indent=2))
    table = markdown(report)
    (args.out / f"{args.name}.md").write_text(table)
    print(table)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
