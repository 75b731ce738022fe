"""Spelling/grammar correction: quality and speed of speculative decoding against plain greedy, on your data.

Input: a TSV, CSV or JSON Lines file of (source, reference) pairs (``--source-column``/``--reference-column``,
default ``source``/``reference``), read with ``datasets.load_dataset`` from the local file. Both decodings run
on the same batches; the recipe reports, for each: CER and WER of the source and of the corrections against the
reference, word-level precision/recall/F1 of the corrections, wall time, and for seq2spec the speedup, acceptance
rate and tokens per big-model forward, plus the share of outputs identical between the two (it must be 100%: if
any differ, they are listed and the recipe exits with status 1).

Beside the model, on the same pairs, the classical spell checkers a user would pick instead (``--peers``, default
``symspellpy,pyspellchecker``; ``none`` for none), word by word with case and punctuation kept (see
``classical_spellers.py``). For every system a second table gives CER/WER, correction precision/recall/F1 and, per
word (``metrics.typo_counts``): the share of typos fixed (a typo: a source word differing from its reference word),
for capitalised and lower-case typo words apart, the share of clean sentences (source == reference) left unchanged
and the share of correct source words broken.

Writes ``<out>/<name>.json``, ``<name>.md`` and ``<name>.png``. With no arguments it runs the shipped speller pair
on the shipped held-out sample (``recipes/data/spelling_heldout.tsv``).

    python recipes/eval_spelling.py
    python recipes/eval_spelling.py my_pairs.jsonl --model org/big --draft org/small --prefix "grammar: "
    python recipes/eval_spelling.py --draft input-copy --limit 200
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from classical_spellers import PEERS, correct_texts, load_peer
from metrics import correction_counts, error_counts, real_text_counts, typo_counts
from tqdm import tqdm

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.flags import add_spelling_flags, spelling_changes
from seq2spec.memory import retain_freed_memory
from seq2spec.spelling.capital_check import output_scorer
from seq2spec.spelling.pipeline import SpellingPipeline

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"  # where reports go by default

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "spelling_heldout.tsv"
# correct's steps around the model (SpellingSettings), as the reports name them
STEP_NAMES = {
    "protect": "protected text kept",
    "fold_capitals": "capitalised words folded",
    "check_capitals": "capitalised non-words checked",
    "check_words": "lower-case non-words checked",
    "check_changes": "changes between dictionary words checked",
    "check_nearer_words": "far words made of non-words checked",
    "check_context_words": "words rare beside their neighbours made of non-words checked",
    "keep_dictionary_words": "dictionary words kept",
    "keep_unknown_words": "unknown words kept",
}


def load_pairs(path: Path, source_column: str, reference_column: str, limit: int | None) -> tuple[list, list]:
    from datasets import load_dataset

    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        dataset = load_dataset("json", data_files=str(path), split="train")
    elif suffix in (".tsv", ".csv"):
        delimiter = "\t" if suffix == ".tsv" else ","
        dataset = load_dataset("csv", data_files=str(path), delimiter=delimiter, split="train", keep_default_na=False)
    else:
        raise SystemExit(f"{path}: expected a .tsv, .csv, .json or .jsonl file")
    for column in (source_column, reference_column):
        if column not in dataset.column_names:
            raise SystemExit(f"{path}: no column {column!r} (columns: {dataset.column_names})")
    if limit:
        dataset = dataset.select(range(min(limit, len(dataset))))
    sources = ["" if s is None else str(s) for s in dataset[source_column]]
    references = ["" if r is None else str(r) for r in dataset[reference_column]]
    return sources, references


def greedy_texts(speculator: Seq2SeqSpeculator, texts: list[str], batch_size: int, prefix: str | None) -> list[str]:
    """``big.generate(do_sample=False)`` of each text, in length-sorted batches as ``correct`` forms them."""
    tokenizer, big = speculator.tokenizer, speculator.big
    sources = [prefix + t if prefix else t for t in texts]
    encoded = [tokenizer(s)["input_ids"] for s in sources]
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
    results = [""] * len(texts)
    for start in tqdm(range(0, len(order), batch_size), desc="greedy batches", unit="batch", file=sys.stderr):
        chunk = order[start : start + batch_size]
        batch = tokenizer.pad({"input_ids": [encoded[i] for i in chunk]}, return_tensors="pt").to(big.device)
        with torch.inference_mode():
            output = big.generate(**batch, do_sample=False)
        for index, text in zip(chunk, tokenizer.batch_decode(output, skip_special_tokens=True), strict=True):
            results[index] = text
    return results


def quality(sources: list[str], references: list[str], outputs: list[str]) -> dict:
    return {
        "cer": error_counts(references, outputs, "char").rate,
        "wer": error_counts(references, outputs, "word").rate,
        "corrections": correction_counts(sources, references, outputs).as_dict(),
        "typos": typo_counts(sources, references, outputs).as_dict(),
        "real_text": real_text_counts(sources, references, outputs).as_dict(),
    }


def run_peers(names: list[str], sources: list[str], references: list[str]) -> dict:
    """Each peer's corrections of ``sources`` scored like the model's; a peer whose package is missing is skipped."""
    results = {}
    for name in names:
        try:
            correct_word = load_peer(name)
        except ImportError as error:
            print(f"{error}: no {name} row", file=sys.stderr)
            continue
        print(f"{name}, word by word ...", file=sys.stderr)
        started = time.perf_counter()
        outputs = correct_texts(sources, correct_word)
        results[name] = {**quality(sources, references, outputs), "seconds": time.perf_counter() - started}
        results[name]["outputs"] = outputs
    return results


def systems_markdown(report: dict) -> list[str]:
    """The second table: one row per system (the noisy input, the model, each peer)."""
    typos = report["speculative"]["typos"]
    lines = [
        "",
        f"{typos['typos']} typos ({typos['capitalised_typos']} capitalised), {typos['clean_sentences']} clean "
        f"sentences, {typos['correct_words']} correct source words",
        "",
        "| system | CER | WER | correction precision | correction recall | correction F1 | typos fixed "
        "| capitalised typos fixed | lower-case typos fixed | clean sentences unchanged | correct words broken "
        "| special characters kept | protected tokens kept | lines fully right | wall time, s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| noisy input | {report['source']['cer']:.4f} | {report['source']['wer']:.4f} | | | | | | | | | | | "
        f"{report['source']['real_text']['lines_right_share']:.1%} | |",
    ]
    rows = [(f"{report['model']} (seq2spec)", report["speculative"])]
    if report["differing"]:
        rows.append((f"{report['model']} (greedy)", report["greedy"]))
    rows += list(report.get("peers", {}).items())
    for name, result in rows:
        c, t, r = result["corrections"], result["typos"], result["real_text"]
        lines.append(
            f"| {name} | {result['cer']:.4f} | {result['wer']:.4f} | {c['precision']:.3f} | {c['recall']:.3f} "
            f"| {c['f1']:.3f} | {t['fixed_share']:.1%} | {t['capitalised_fixed_share']:.1%} "
            f"| {t['lowercase_fixed_share']:.1%} | {t['clean_unchanged_share']:.1%} | {t['broken_share']:.2%} "
            f"| {r['characters_kept_share']:.1%} | {r['protected_kept_share']:.1%} | {r['lines_right_share']:.1%} "
            f"| {result['seconds']:.2f} |"
        )
    return lines


def markdown(report: dict) -> str:
    g, s = report["greedy"], report["speculative"]
    lines = [
        f"{report['pairs']} pairs from `{report['data']}`; model `{report['model']}`, draft `{report['draft']}`, "
        f"batch size {report['batch_size']}"
        + "".join(f"; {name}" for key, name in STEP_NAMES.items() if report.get(key)),
        "",
        "| | source (uncorrected) | greedy | seq2spec |",
        "|---|---:|---:|---:|",
        f"| CER | {report['source']['cer']:.4f} | {g['cer']:.4f} | {s['cer']:.4f} |",
        f"| WER | {report['source']['wer']:.4f} | {g['wer']:.4f} | {s['wer']:.4f} |",
        f"| correction precision | | {g['corrections']['precision']:.3f} | {s['corrections']['precision']:.3f} |",
        f"| correction recall | | {g['corrections']['recall']:.3f} | {s['corrections']['recall']:.3f} |",
        f"| correction F1 | | {g['corrections']['f1']:.3f} | {s['corrections']['f1']:.3f} |",
        f"| wall time, s | | {g['seconds']:.2f} | {s['seconds']:.2f} |",
        f"| speedup over greedy | | 1.00 | {report['speedup']:.2f} |",
        f"| acceptance rate | | | {s['acceptance_rate']:.3f} |",
        f"| tokens per big forward | | 1.00 | {s['tokens_per_big_forward']:.2f} |",
        f"| outputs identical to greedy | | | {report['identical_share']:.1%} |",
    ]
    return "\n".join(lines + systems_markdown(report)) + "\n"


def plot(report: dict, path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed (pip install 'seq2spec[bench]'): no chart written", file=sys.stderr)
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3.4))
    peers = report.get("peers", {})
    names = ["source", "greedy", "seq2spec", *peers]
    cers = [report["source"]["cer"], report["greedy"]["cer"], report["speculative"]["cer"]]
    cers += [peer["cer"] for peer in peers.values()]
    colours = ["grey", "tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"]
    left.bar(names, cers, color=colours[: len(names)])
    left.tick_params(axis="x", labelsize=7)
    left.set_title("CER against the reference")
    seconds = [report["greedy"]["seconds"], report["speculative"]["seconds"]]
    right.bar(["greedy", "seq2spec"], seconds, color=["tab:blue", "tab:orange"])
    right.set_title(f"wall time, s (x{report['speedup']:.2f})")
    figure.suptitle(f"{report['pairs']} pairs, identical outputs: {report['identical_share']:.0%}", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--source-column", default="source")
    parser.add_argument("--reference-column", default="reference")
    parser.add_argument("--model", help="big model name or path (default: the shipped speller)")
    parser.add_argument(
        "--draft", help="draft model, 'input-copy', or 'none' (default: the shipped speller's default proposer)"
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--limit", type=int, help="first N pairs only")
    parser.add_argument("--prefix", help="text put before every source, e.g. 'grammar: '")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="spelling")
    add_spelling_flags(parser)  # as correct takes them; unset: the model's own settings
    parser.add_argument(
        "--peers",
        default=",".join(PEERS),
        help="classical spell checkers scored beside the model, comma-separated, or 'none' (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    retain_freed_memory()  # as the commands do: no page faults on buffers reused every call
    peer_names = [name.strip() for name in args.peers.split(",") if name.strip() not in ("", "none")]
    unknown = [name for name in peer_names if name not in PEERS]
    if unknown:
        parser.error(f"unknown peers {unknown}; known: {', '.join(PEERS)}")

    sources, references = load_pairs(args.data, args.source_column, args.reference_column, args.limit)
    draft = None if args.draft in (None, "none") else args.draft
    if args.model is None and args.draft == "none":  # the shipped speller without its draft
        speculator = Seq2SeqSpeculator(draft=None)
    elif args.draft is None:  # the shipped speller's default proposer, or no draft with another model
        speculator = Seq2SeqSpeculator(args.model)
    else:
        speculator = Seq2SeqSpeculator(args.model, draft)
    settings = speculator.spelling.updated(**spelling_changes(args))
    options = dict(batch_size=args.batch_size, prefix=args.prefix, spelling=settings)
    speculator.correct(sources[:4], **options)  # warm-up

    print(f"greedy decoding of {len(sources)} sources ...", file=sys.stderr)
    started = time.perf_counter()
    # plain greedy decoding through the same text steps: the two differ only in how the model's output is decoded
    score = output_scorer(speculator.big, speculator.tokenizer, args.prefix) if settings.checks_scores else None
    decode = lambda texts: greedy_texts(speculator, texts, args.batch_size, args.prefix)  # noqa: E731
    greedy = SpellingPipeline(settings, decode, score, speculator.tokenizer)(sources)
    greedy_seconds = time.perf_counter() - started
    print("seq2spec decoding ...", file=sys.stderr)
    started = time.perf_counter()
    speculative = speculator.correct(sources, progress=True, **options)
    speculative_seconds = time.perf_counter() - started
    stats = speculator.last_stats
    peers = run_peers(peer_names, sources, references)

    differing = [i for i, (a, b) in enumerate(zip(greedy, speculative, strict=True)) if a != b]
    report = {
        "data": str(args.data),
        "pairs": len(sources),
        "model": args.model or "shipped speller",
        "draft": args.draft or ("shipped draft" if args.model is None else "none"),
        "batch_size": args.batch_size,
        **{name: getattr(settings, name) for name in STEP_NAMES},
        "source": {
            "cer": error_counts(references, sources, "char").rate,
            "wer": error_counts(references, sources).rate,
            "real_text": real_text_counts(sources, references, sources).as_dict(),
        },
        "greedy": {**quality(sources, references, greedy), "seconds": greedy_seconds},
        "speculative": {
            **quality(sources, references, speculative),
            "seconds": speculative_seconds,
            "acceptance_rate": stats.acceptance_rate,
            "tokens_per_big_forward": stats.tokens_per_big_forward,
        },
        "speedup": greedy_seconds / speculative_seconds if speculative_seconds else 0.0,
        "identical_share": 1 - len(differing) / max(1, len(sources)),
        "differing": [{"index": i, "greedy": greedy[i], "seq2spec": speculative[i]} for i in differing],
        "peers": {name: {k: v for k, v in result.items() if k != "outputs"} for name, result in peers.items()},
        "outputs": [
            {"source": s, "reference": r, "seq2spec": o, **{name: peers[name]["outputs"][i] for name in peers}}
            for i, (s, r, o) in enumerate(zip(sources, references, speculative, strict=True))
        ],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    table = markdown(report)
    (args.out / f"{args.name}.md").write_text(table)
    plot(report, args.out / f"{args.name}.png")
    print(table)
    print(f"written: {args.out / args.name}.json, .md, .png", file=sys.stderr)
    if differing:
        for item in report["differing"][:10]:
            print(f"DIFFERS at {item['index']}: greedy {item['greedy']!r} vs seq2spec {item['seq2spec']!r}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
