"""The big model's vocabulary head on a CPU: its products for 1 to 16 positions, timed, and which one seq2spec uses.

A verification forward feeds a few tokens per row; the head's product then runs over rows x tokens positions.
For whisper-base's head (51,865 x 512) and the shipped speller's, each number of positions is timed three ways
(``seq2spec.decoding.fast.head``): the model's own product (``nn.Linear``), the product in vocabulary slices, and each
position's product alone in one batched call; beside each, whether it is bit-equal to what it must equal (the own
product for the slices; the product of each position alone for the per-position one) and the product a ``FastHead``
chooses on its first call. Each timing is the median of ``--repeats`` calls after one warm-up call. Writes
``results/head_<device>.{json,md,png}``.

    python benchmarks/bench_head.py --positions 1 2 3 4 5 6 8 12 16
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch
from torch import nn

from seq2spec.decoding.fast.head import OWN, PER_POSITION, SLICED, FastHead

HERE = Path(__file__).resolve().parent


def median_ms(product, flat: torch.Tensor, repeats: int) -> float:
    product(flat)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        product(flat)
        times.append(time.perf_counter() - started)
    return round(1000 * statistics.median(times), 2)


def measure(name: str, head: nn.Linear, positions: list[int], repeats: int) -> list[dict]:
    rows = []
    generator = torch.Generator().manual_seed(0)
    for count in positions:
        flat = torch.randn(count, head.in_features, generator=generator, dtype=head.weight.dtype)
        fast = FastHead(head)
        own = head(flat)
        alone = torch.cat([head(position) for position in flat.split(1)])
        fast(flat)  # its first call chooses
        row = {"head": name, "positions": count, "chosen": fast.choices.get((count, head.in_features), OWN)}
        for label, product, reference in (
            (OWN, head, own),
            (SLICED, fast.sliced, own),
            (PER_POSITION, fast.per_position, alone),
        ):
            row[f"{label}_ms"] = median_ms(product, flat, repeats)
            row[f"{label}_exact"] = bool(torch.equal(product(flat), reference))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def markdown(result: dict) -> str:
    lines = [result["header"], ""]
    lines.append("| head | positions | own ms | sliced ms | per-position ms | chosen |")
    lines.append("|---|---:|---:|---:|---:|---|")
    for row in result["rows"]:
        cells = []
        for label in (OWN, SLICED, PER_POSITION):
            exact = "" if row[f"{label}_exact"] else " (not exact)"
            cells.append(f"{row[f'{label}_ms']:.1f}{exact}")
        lines.append(f"| {row['head']} | {row['positions']} | " + " | ".join(cells) + f" | {row['chosen']} |")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heads = sorted({row["head"] for row in result["rows"]})
    figure, axes = plt.subplots(1, len(heads), figsize=(6 * len(heads), 4), squeeze=False)
    for axis, head in zip(axes[0], heads, strict=True):
        rows = [row for row in result["rows"] if row["head"] == head]
        for label in (OWN, SLICED, PER_POSITION):
            axis.plot([row["positions"] for row in rows], [row[f"{label}_ms"] for row in rows], marker="o", label=label)
        axis.set_title(f"{head}: head product")
        axis.set_xlabel("positions (rows x tokens fed)")
        axis.set_ylabel("ms")
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 8, 12, 16])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--name", default="head_cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from seq2spec.default_models import load_speller, load_whisper_base

    whisper, _ = load_whisper_base()
    speller, _, _ = load_speller()
    rows = []
    with torch.no_grad():
        for name, model in (("whisper-base", whisper), ("speller", speller)):
            head = model.get_output_embeddings()
            rows += measure(f"{name} {head.out_features} x {head.in_features}", head, args.positions, args.repeats)
    header = (
        f"The big models' vocabulary heads (float32) on a CPU: {args.threads} threads, {platform.machine()}, "
        f"torch {torch.__version__}; median of {args.repeats} calls per product; `(not exact)`: not bit-equal to "
        "what it must equal, so never used. The speller's head is under `MIN_HEAD_BYTES` (16 MiB): seq2spec leaves "
        "it as it is; it is timed here to show why."
    )
    result = {"header": header, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(result))
    plot(result, args.out / f"{args.name}.png")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
