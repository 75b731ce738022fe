"""Spelling-correction speed on the shipped speller pair: seq2spec against greedy and the peers, in one run.

Methods, timed on the same held-out sentences, interleaved, median of ``--repeats`` runs after a warm-up:
- ``greedy``: ``big.generate(do_sample=False)`` at the same batch size (the baseline of every ratio);
- ``hf assisted``: transformers' assisted generation with the draft (``assistant_model=``; batch size 1 only);
- ``seq2spec per-row`` / ``seq2spec batch-min``: the draft model, adaptive draft length, per-row acceptance or
  every row rolled back to the batch's earliest mismatch (the published batched design);
- ``seq2spec per-row fixed``: the draft model with a fixed draft length;
- ``seq2spec per-row hf-step``: per-row, with the draft's encoder and decoder run through transformers' modules
  instead of seq2spec's lean T5 encoder and step (``lean_draft=False``): what the lean draft saves;
- ``seq2spec per-row hf-forward``: per-row, with the big model's verification forwards run through transformers'
  forward instead of seq2spec's bit-exact mirror of it (``exact_big_forward=False``): what the mirror saves;
- ``seq2spec input-copy``: no draft model, candidates copied from each row's source;
- ``seq2spec copy+draft``: copy where it aligns, the draft model elsewhere;
- ``seq2spec spellcheck copy`` / ``seq2spec spellcheck copy+draft``: the same, copying from the source after a
  classical word-by-word spell check (``spellcheck_copy=True``).
Every output is compared with greedy's, token for token.

    python benchmarks/bench_spelling.py                      # batch sizes 1, 4, 16, 64
    python benchmarks/bench_spelling.py --quick              # fewer sentences, one timed run
    python benchmarks/bench_spelling.py --device cuda --dtype float16
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import transformers

from seq2spec import Seq2SeqSpeculator, SpeculationStats
from seq2spec.default_models import load_speller
from seq2spec.memory import retain_freed_memory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import DecoderCallCounter, processor_name  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "recipes" / "data" / "spelling_heldout.tsv"
# "int8": seq2spec's int8 mode on a CPU (seq2spec.int8); greedy is then the int8 big model's own generate
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int8": "int8"}


@dataclass
class Row:
    batch_size: int
    method: str
    seconds: float
    speedup: float
    tokens: int
    tokens_per_second: float
    big_forwards_per_token: float
    tokens_per_big_row_forward: float
    acceptance_rate: float
    peak_memory_mb: float | None
    identical_to_greedy: bool
    accepted_length_histogram: list[int] = field(default_factory=list)
    wer: float | None = None  # against the references, where the benchmark has them


def read_sources(path: Path, limit: int | None) -> list[str]:
    with open(path, encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.reader(handle, delimiter="\t") if row]
    sources = [row[0] for row in rows[1:]]  # header: source, reference
    return sources[:limit] if limit else sources


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


PEERS = ("hf assisted",)  # another project's method: a failure of it is recorded, and the run goes on


def record_peer_failure(failures: dict[str, str], case: str, error: Exception) -> None:
    """Keeps a peer's error for the results (``case``: method and batch) and says so; the run goes on."""
    failures[case] = f"{type(error).__name__}: {error}"
    print(f"{case}: failed ({failures[case]})", flush=True)


def bench(args, failures: dict[str, str]) -> list[Row]:
    """Rows of the table; a peer that raises is left out of its batch size and its error kept in ``failures``."""
    device = torch.device(args.device)
    big, small, tokenizer = load_speller(device=device, dtype=DTYPES[args.dtype])
    counter = DecoderCallCounter(big)
    rows: list[Row] = []
    for batch_size in args.batch_sizes:
        limit = args.inputs_batch1 if batch_size == 1 else args.inputs
        texts = read_sources(args.data, limit)
        texts.sort(key=len)  # batches of similar length, as correct() forms them
        batches = []
        for start in range(0, len(texts), batch_size):
            encoded = tokenizer(texts[start : start + batch_size], padding=True, return_tensors="pt")
            batches.append((encoded["input_ids"].to(device), encoded["attention_mask"].to(device)))

        def greedy(ids, mask):
            return big.generate(ids, attention_mask=mask, max_new_tokens=args.max_new_tokens, do_sample=False), None

        methods: dict[str, Callable] = {"greedy": greedy}
        if batch_size == 1:

            def assisted(ids, mask):
                output = big.generate(
                    ids, attention_mask=mask, max_new_tokens=args.max_new_tokens, do_sample=False, assistant_model=small
                )
                return output, None

            methods["hf assisted"] = assisted
        variants = {
            "seq2spec per-row": Seq2SeqSpeculator(big, small, tokenizer),
            "seq2spec batch-min": Seq2SeqSpeculator(big, small, tokenizer, acceptance="batch-min"),
            "seq2spec per-row fixed": Seq2SeqSpeculator(big, small, tokenizer, adaptive=False),
            "seq2spec per-row hf-step": Seq2SeqSpeculator(big, small, tokenizer, lean_draft=False),
            "seq2spec per-row hf-forward": Seq2SeqSpeculator(big, small, tokenizer, exact_big_forward=False),
            "seq2spec input-copy": Seq2SeqSpeculator(big, tokenizer=tokenizer, draft="input-copy"),
            "seq2spec copy+draft": Seq2SeqSpeculator(big, small, tokenizer, input_copy=True),
            "seq2spec spellcheck copy": Seq2SeqSpeculator(big, "input-copy", tokenizer, spellcheck_copy=True),
            "seq2spec spellcheck copy+draft": Seq2SeqSpeculator(
                big, small, tokenizer, input_copy=True, spellcheck_copy=True
            ),
        }
        for name, speculator in variants.items():

            def run(ids, mask, s=speculator):
                return s.generate(ids, mask, max_new_tokens=args.max_new_tokens), s.last_stats

            methods[name] = run

        for name, method in list(methods.items()):  # warm-up
            try:
                for ids, mask in batches[:2]:
                    method(ids, mask)
            except Exception as error:
                if name not in PEERS:
                    raise
                record_peer_failure(failures, f"{name}, batch size {batch_size}", error)
                del methods[name]
        times: dict[str, list[float]] = {name: [] for name in methods}
        for _ in range(args.repeats):
            for name, method in methods.items():
                _sync(device)
                start = time.perf_counter()
                for ids, mask in batches:
                    method(ids, mask)
                _sync(device)
                times[name].append(time.perf_counter() - start)
        seconds = {name: statistics.median(values) for name, values in times.items()}

        reference = None
        for name, method in methods.items():  # one untimed pass: outputs, calls, statistics, memory
            counter.calls = 0
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            outputs, total = [], SpeculationStats()
            for ids, mask in batches:
                output, stats = method(ids, mask)
                outputs.append(output)
                if stats is not None:
                    total.merge(stats)
            peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None
            if reference is None:
                reference = outputs
            identical = all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(outputs, reference, strict=True))
            tokens = sum(int((out[:, 1:] != tokenizer.pad_token_id).sum()) for out in reference)
            rows.append(
                Row(
                    batch_size=batch_size,
                    method=name,
                    seconds=seconds[name],
                    speedup=seconds["greedy"] / seconds[name],
                    tokens=tokens,
                    tokens_per_second=tokens / seconds[name],
                    big_forwards_per_token=counter.calls / tokens,
                    tokens_per_big_row_forward=total.tokens_per_big_forward if total.big_row_forwards else 1.0,
                    acceptance_rate=total.acceptance_rate,
                    peak_memory_mb=peak,
                    identical_to_greedy=identical,
                    accepted_length_histogram=list(total.accepted_length_histogram),
                )
            )
            row = rows[-1]
            print(
                f"bs={batch_size:<3} {name:24} {row.seconds:7.2f}s x{row.speedup:5.2f} "
                f"big forwards/token={row.big_forwards_per_token:.3f} tokens/row-forward="
                f"{row.tokens_per_big_row_forward:.2f} accept={row.acceptance_rate:.2f} identical={identical}",
                flush=True,
            )
    return rows


def markdown(rows: list[Row], machine: str, failures: dict[str, str] | None = None) -> str:
    with_wer = any(r.wer is not None for r in rows)
    lines = [
        f"Machine: {machine}",
        "",
        "| batch | method | wall s | speedup vs greedy | tokens/s | big forwards/token | tokens per big row-forward "
        "| acceptance | peak MB | identical |" + (" WER |" if with_wer else ""),
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|" + ("---:|" if with_wer else ""),
    ]
    for r in rows:
        peak = f"{r.peak_memory_mb:.0f}" if r.peak_memory_mb is not None else "-"
        wer = (f" {r.wer:.3f} |" if r.wer is not None else " - |") if with_wer else ""
        lines.append(
            f"| {r.batch_size} | {r.method} | {r.seconds:.2f} | {r.speedup:.2f} | {r.tokens_per_second:.0f} "
            f"| {r.big_forwards_per_token:.3f} | {r.tokens_per_big_row_forward:.2f} | {r.acceptance_rate:.2f} "
            f"| {peak} | {'yes' if r.identical_to_greedy else 'NO'} |{wer}"
        )
    for method, error in (failures or {}).items():
        lines.append(f"\n{method}: failed on this machine ({error})")
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], stem: Path, title: str = "Shipped speller pair") -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'seq2spec[bench]'): no plots written")
        return
    figure, axis = plt.subplots(figsize=(6.5, 4))
    for method in dict.fromkeys(r.method for r in rows):
        if method == "greedy":
            continue
        points = [(r.batch_size, r.speedup) for r in rows if r.method == method]
        xs, ys = zip(*points, strict=True)
        axis.plot(xs, ys, "o-" if len(xs) > 1 else "D", label=method)
    axis.axhline(1.0, color="grey", linewidth=0.8)
    axis.set_xscale("log", base=2)
    axis.set_xlabel("batch size")
    axis.set_ylabel("speedup over big.generate greedy")
    axis.set_title(title)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(f"{stem}_speedup.png", dpi=120)

    figure, axis = plt.subplots(figsize=(6.5, 4))
    largest = max(r.batch_size for r in rows)
    for r in rows:
        if r.batch_size == largest and r.accepted_length_histogram:
            total = sum(r.accepted_length_histogram)
            axis.plot(
                range(len(r.accepted_length_histogram)),
                [c / total for c in r.accepted_length_histogram],
                "o-",
                label=r.method,
                markersize=3,
            )
    axis.set_xlabel("candidates accepted in a round")
    axis.set_ylabel("share of row-rounds")
    axis.set_title(f"Accepted lengths, batch size {largest}")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(f"{stem}_accepted_lengths.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="TSV with a header and source<TAB>reference rows")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 4, 16, 64])
    parser.add_argument("--inputs", type=int, default=256, help="sentences per batch size above 1")
    parser.add_argument("--inputs-batch1", type=int, default=48, help="sentences at batch size 1")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--name", help="file stem of the results (default: spelling_<device>[_int8])")
    parser.add_argument("--quick", action="store_true", help="64 sentences (16 at batch size 1), one timed run")
    args = parser.parse_args()
    if args.quick:
        args.inputs, args.inputs_batch1, args.repeats = 64, 16, 1
    torch.set_num_threads(args.threads)
    retain_freed_memory()  # as the commands do: no page faults on buffers reused every call
    if args.device == "cpu":
        machine = f"CPU {processor_name()}, {args.threads} torch threads, torch {torch.__version__}, {args.dtype}"
    else:
        machine = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, {args.dtype}"
    machine += f", transformers {transformers.__version__}"
    failures: dict[str, str] = {}
    rows = bench(args, failures)
    args.out.mkdir(parents=True, exist_ok=True)
    device_tag = "cpu" if args.device == "cpu" else "cuda"
    precision_tag = "_int8" if args.dtype == "int8" else ""
    stem = args.out / (args.name or f"spelling_{device_tag}{precision_tag}{'_quick' if args.quick else ''}")
    record = {
        "machine": machine,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "rows": [asdict(r) for r in rows],
        "failures": failures,
    }
    Path(f"{stem}.json").write_text(json.dumps(record, indent=2))
    table = markdown(rows, machine, failures)
    Path(f"{stem}.md").write_text(table)
    plot(rows, stem)
    print()
    print(table)
    if not all(r.identical_to_greedy for r in rows):
        sys.exit("some outputs differ from greedy")


if __name__ == "__main__":
    main()
