"""The shipped speller with its copied proposals cut to the width that pays (``fit_copy_width``, the default) and
kept whole, at several batch sizes.

The lines are ``recipes/data/real_text``'s two test files (technical prose and everyday prose with Unicode), 60% of
them with one or two typos in plain words (``bench_correct.with_typos``). Both sides are one speculator whose option
is switched between calls, so they share everything else. Per batch size, in one process: each side once on the
first lines (their first use of the shapes), then the sides in turn, fitted, whole, whole, fitted; each side's mean of
two. Both sides must return the same lines. Rows: seconds, fitted against whole, big forwards, the positions fed to
them (padding included) and the candidates copied into them.

    python benchmarks/bench_copy_width.py                          # batch sizes 1 8 32
    python benchmarks/bench_copy_width.py --batch-sizes 32 --lines 128
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_correct import with_typos  # noqa: E402

TEXTS = HERE.parent / "recipes" / "data" / "real_text"
SIDES = ("fitted", "whole")
COUNTED = ("big_forwards", "big_positions", "proposed_copy_tokens", "generated_tokens")


def test_lines(count: int, seed: int) -> list[str]:
    lines = []
    for name in ("technical.txt", "unicode.txt"):
        lines += [line for line in (TEXTS / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    return with_typos(lines, seed)[:count]


def correct(speculator, lines: list[str], batch_size: int, fitted: bool) -> tuple[list[str], float, dict]:
    speculator.options = speculator.options.updated(fit_copy_width=fitted)
    started = time.perf_counter()
    if batch_size == 1:  # one call per line, as requests come one at a time
        output, stats = [], dict.fromkeys(COUNTED, 0)
        for line in lines:
            output += speculator.correct([line], batch_size=1)
            for key in stats:
                stats[key] += speculator.last_stats.as_dict()[key]
    else:
        output = speculator.correct(lines, batch_size=batch_size)
        stats = speculator.last_stats.as_dict()
    return output, time.perf_counter() - started, stats


def measure(speculator, lines: list[str], batch_size: int) -> dict:
    for name in SIDES:
        correct(speculator, lines[: max(batch_size, 8)], batch_size, name == "fitted")
    seconds: dict[str, list[float]] = {name: [] for name in SIDES}
    outputs, stats = {}, {}
    for name in ("fitted", "whole", "whole", "fitted"):
        outputs[name], elapsed, stats[name] = correct(speculator, lines, batch_size, name == "fitted")
        seconds[name].append(elapsed)
    if outputs["fitted"] != outputs["whole"]:
        raise SystemExit(f"batch {batch_size}: the two sides returned different lines")
    mean = {name: sum(values) / len(values) for name, values in seconds.items()}
    return {
        "batch_size": batch_size,
        "lines": len(lines),
        "seconds": {name: [round(value, 3) for value in values] for name, values in seconds.items()},
        "fitted_s": round(mean["fitted"], 3),
        "whole_s": round(mean["whole"], 3),
        "speedup": round(mean["whole"] / mean["fitted"], 3),
        "big_forwards": {name: stats[name]["big_forwards"] for name in SIDES},
        "big_positions": {name: stats[name]["big_positions"] for name in SIDES},
        "proposed_copy_tokens": {name: stats[name]["proposed_copy_tokens"] for name in SIDES},
        "generated_tokens": stats["fitted"]["generated_tokens"],
        "identical": True,
    }


def markdown(record: dict) -> str:
    lines = [
        f"Machine: {record['machine']}; the shipped speller (input copy from a spell-checked source); "
        f"{record['lines']} lines of recipes/data/real_text with typos; one call per line at batch 1",
        "",
        "| batch | lines | whole s | fitted s | fitted speedup | big forwards whole / fitted | positions fed whole / "
        "fitted | copied candidates whole / fitted | identical |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in record["rows"]:
        forwards, positions, copied = row["big_forwards"], row["big_positions"], row["proposed_copy_tokens"]
        lines.append(
            f"| {row['batch_size']} | {row['lines']} | {row['whole_s']} | {row['fitted_s']} | {row['speedup']:.2f}x | "
            f"{forwards['whole']} / {forwards['fitted']} | {positions['whole']} / {positions['fitted']} | "
            f"{copied['whole']} / {copied['fitted']} | "
            f"{'yes' if row['identical'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def plot(record: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = record["rows"]
    figure, axis = plt.subplots(figsize=(6, 4))
    labels = [str(row["batch_size"]) for row in rows]
    positions = range(len(rows))
    axis.bar([p - 0.2 for p in positions], [row["whole_s"] / row["lines"] * 1000 for row in rows], 0.4, label="whole")
    axis.bar([p + 0.2 for p in positions], [row["fitted_s"] / row["lines"] * 1000 for row in rows], 0.4, label="fitted")
    axis.set_xticks(list(positions), labels)
    axis.set_xlabel("batch size")
    axis.set_ylabel("ms per line")
    axis.set_title("copied proposals: whole or cut to the fitted width")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--lines", type=int, default=320, help="lines at batch sizes over 1")
    parser.add_argument("--lines-one-at-a-time", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--name", default="copy_width_cpu")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from seq2spec import Seq2SeqSpeculator, retain_freed_memory

    retain_freed_memory()
    lines = test_lines(args.lines, args.seed)
    speculator = Seq2SeqSpeculator()
    machine = f"{platform.machine()}, {args.threads} threads, torch {torch.__version__}, float32"
    record = {"machine": machine, "lines": len(lines), "rows": []}
    for batch_size in args.batch_sizes:
        chosen = lines[: args.lines_one_at_a_time] if batch_size == 1 else lines
        record["rows"].append(measure(speculator, chosen, batch_size))
        print(record["rows"][-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / args.name
    Path(f"{stem}.json").write_text(json.dumps(record, indent=2) + "\n")
    Path(f"{stem}.md").write_text(markdown(record))
    plot(record, Path(f"{stem}.png"))
    print(markdown(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
