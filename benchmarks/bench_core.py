"""Core speed benchmark: seq2spec (per-row and batch-min acceptance) against ``big.generate`` greedy, on CPU.

The model pairs are random but nondegenerate (``seq2spec.commands.toys.build_toy_pair``): a T5 v1.1-style big model
whose deeper decoder layers are damped, and a shallow draft made of its first layers that shares its encoder.
They stand in for a trained big/distilled pair until real ones ship; absolute times depend on the machine, the
ratios are what to read. Every seq2spec output is checked against greedy before it is timed.

    python benchmarks/bench_core.py                 # both pairs, batch sizes 1, 8, 32
    python benchmarks/bench_core.py --quick         # small pair only, fewer inputs
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import build_toy_pair, random_sources
from seq2spec.memory import retain_freed_memory


@dataclass
class Row:
    pair: str
    batch_size: int
    method: str
    seconds: float
    speedup: float
    tokens: int
    tokens_per_second: float
    big_decoder_calls_per_token: float
    tokens_per_big_row_forward: float
    acceptance_rate: float
    identical_to_greedy: bool


class DecoderCallCounter:
    """Counts big-model decoder calls, whoever makes them (generate or seq2spec)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.calls = 0
        model.get_decoder().register_forward_hook(self._count)

    def _count(self, *_args) -> None:
        self.calls += 1


def processor_name() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one): timings on different CPUs differ a lot."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _batches(input_ids: torch.Tensor, mask: torch.Tensor, batch_size: int):
    for start in range(0, input_ids.shape[0], batch_size):
        ids, attention = input_ids[start : start + batch_size], mask[start : start + batch_size]
        width = int(attention.sum(dim=1).max())
        yield ids[:, :width], attention[:, :width]


def _run(method, batches, max_new_tokens):
    return [method(ids, attention, max_new_tokens) for ids, attention in batches]


def _timed_interleaved(methods: dict, batches, max_new_tokens, repeats) -> dict:
    """Median wall time per method; the methods take turns in every repeat so that drift hits all alike."""
    for method in methods.values():
        _run(method, batches, max_new_tokens)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(repeats):
        for name, method in methods.items():
            start = time.perf_counter()
            _run(method, batches, max_new_tokens)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def bench_pair(pair: str, args) -> list[Row]:
    big, draft = build_toy_pair(pair)
    counter = DecoderCallCounter(big)
    input_ids, mask = random_sources(args.inputs, seed=0, vocab_size=big.config.vocab_size, max_length=24)
    rows: list[Row] = []
    for batch_size in args.batch_sizes:
        batches = list(_batches(input_ids, mask, batch_size))

        def greedy(ids, attention, max_new):
            return big.generate(ids, attention_mask=attention, max_new_tokens=max_new, do_sample=False)

        speculators = {
            mode: Seq2SeqSpeculator(big, draft, num_draft_tokens=args.num_draft_tokens, acceptance=mode)
            for mode in ("per-row", "batch-min")
        }
        methods = {"greedy": greedy}
        for mode, speculator in speculators.items():
            methods[f"seq2spec {mode}"] = lambda ids, attention, max_new, s=speculator: s.generate(
                ids, attention, max_new_tokens=max_new
            )
        seconds = _timed_interleaved(methods, batches, args.max_new_tokens, args.repeats)

        # One more, untimed pass per method for outputs, decoder-call counts and statistics.
        counter.calls = 0
        reference = _run(greedy, batches, args.max_new_tokens)
        tokens = sum(int((out[:, 1:] != 0).sum()) for out in reference)
        rows.append(
            Row(
                pair,
                batch_size,
                "greedy",
                seconds["greedy"],
                1.0,
                tokens,
                tokens / seconds["greedy"],
                counter.calls / tokens,
                1.0,
                0.0,
                True,
            )
        )
        for mode, speculator in speculators.items():
            name = f"seq2spec {mode}"
            counter.calls = 0
            outputs, stats = [], []
            for ids, attention in batches:
                outputs.append(speculator.generate(ids, attention, max_new_tokens=args.max_new_tokens))
                stats.append(speculator.last_stats)
            identical = all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(outputs, reference, strict=True))
            row_forwards = sum(s.big_row_forwards for s in stats)
            proposed = sum(s.proposed_draft_tokens for s in stats)
            accepted = sum(s.accepted_draft_tokens for s in stats)
            rows.append(
                Row(
                    pair,
                    batch_size,
                    name,
                    seconds[name],
                    seconds["greedy"] / seconds[name],
                    tokens,
                    tokens / seconds[name],
                    counter.calls / tokens,
                    tokens / row_forwards,
                    accepted / proposed if proposed else 0.0,
                    identical,
                )
            )
        for row in rows[-3:]:
            print(
                f"{row.pair:6} bs={row.batch_size:<3} {row.method:20} {row.seconds:7.2f}s "
                f"x{row.speedup:.2f} calls/token={row.big_decoder_calls_per_token:.3f} "
                f"accept={row.acceptance_rate:.2f} identical={row.identical_to_greedy}",
                flush=True,
            )
    return rows


def markdown(rows: list[Row], machine: str) -> str:
    lines = [
        f"Machine: {machine}",
        "",
        "| pair | batch | method | wall s | speedup vs greedy | tokens/s | big decoder calls/token "
        "| tokens per big row-forward | acceptance | identical |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.pair} | {r.batch_size} | {r.method} | {r.seconds:.2f} | {r.speedup:.2f} | {r.tokens_per_second:.0f} "
            f"| {r.big_decoder_calls_per_token:.3f} | {r.tokens_per_big_row_forward:.2f} | {r.acceptance_rate:.2f} "
            f"| {'yes' if r.identical_to_greedy else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'seq2spec[bench]'): no plot written")
        return False
    figure, axis = plt.subplots(figsize=(6, 4))
    for pair in sorted({r.pair for r in rows}):
        for method, style in (("seq2spec per-row", "-o"), ("seq2spec batch-min", "--s")):
            points = [(r.batch_size, r.speedup) for r in rows if r.pair == pair and r.method == method]
            if points:
                xs, ys = zip(*points, strict=True)
                axis.plot(xs, ys, style, label=f"{pair}: {method}")
    axis.axhline(1.0, color="grey", linewidth=0.8)
    axis.set_xscale("log", base=2)
    axis.set_xlabel("batch size")
    axis.set_ylabel("speedup over big.generate greedy")
    axis.set_title("seq2spec core loop, CPU")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", nargs="+", default=["small", "large"], choices=["small", "large"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 8, 32])
    parser.add_argument("--inputs", type=int, default=32, help="number of source sequences")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--num-draft-tokens", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per configuration (median reported)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--quick", action="store_true", help="small pair, 16 inputs, 1 timed run")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.inputs, args.repeats = ["small"], 16, 1
    torch.set_num_threads(args.threads)
    retain_freed_memory()  # as the commands do: no page faults on buffers reused every call
    torch.manual_seed(0)
    machine = f"{processor_name()}, {args.threads} torch threads, torch {torch.__version__}"
    rows = [row for pair in args.pairs for row in bench_pair(pair, args)]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "core_quick" if args.quick else "core"
    (args.out / f"{stem}.json").write_text(
        json.dumps(
            {
                "machine": machine,
                "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                "rows": [asdict(r) for r in rows],
            },
            indent=2,
        )
    )
    table = markdown(rows, machine)
    (args.out / f"{stem}.md").write_text(table)
    plot(rows, args.out / f"{stem}_speedup.png")
    print()
    print(table)
    if not all(r.identical_to_greedy for r in rows):
        raise SystemExit("some seq2spec outputs differ from greedy")


if __name__ == "__main__":
    main()
