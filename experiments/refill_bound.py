"""How much could refilling a batch as its rows finish gain over sorted fixed batches?

``correct()`` and ``transcribe()`` sort their inputs by length into fixed batches; a row that finishes leaves the
batch, so the later rounds of a batch run with fewer rows. Refilling would keep every round full: the same row-rounds
in fewer, fuller rounds. This benchmark times every round of a real run (one round: a big verification forward, the
draft's proposal steps and the loop's work around them), fits the round's cost as ``fixed + per_row * rows`` over
the rounds after each batch's first, and compares the rounds as they ran with the same row-rounds packed into full
rounds at that cost. First rounds (they also build the cross-attention caches) are kept as they were.

The packed figure is an upper bound on what refilling can save: it leaves out what refilling costs (the encoder run
for a few newcomers at a time, longer padded caches when short and long rows share a batch, the bookkeeping).
Where ``per_row`` dominates ``fixed`` (a CPU, whose arithmetic grows with the rows) the bound is small; where rounds
cost about the same whatever their rows (a GPU at these sizes) it approaches the share of empty row slots.

    python experiments/refill_bound.py                                   # the speller, batch 16 and 32, on a CPU
    python experiments/refill_bound.py --cases speller whisper --device cuda --dtype float16 --name refill_bound_cuda
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding import runner as runner_module
from seq2spec.decoding import search as search_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_core import processor_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class RoundLog:
    """Rows and seconds of every round of one run, and which rounds opened a batch."""

    rows: list[int]
    seconds: list[float]
    first: list[bool]


@dataclass
class Bound:
    case: str
    batch_size: int
    inputs: int
    wall_s: float
    rounds: int
    row_rounds: int
    mean_rows: float
    fixed_ms: float
    per_row_ms: float
    fit_r2: float
    rounds_s: float
    packed_rounds: int
    packed_s: float

    @property
    def saving_share_of_wall(self) -> float:
        return (self.rounds_s - self.packed_s) / self.wall_s


@contextmanager
def round_timer(big: torch.nn.Module, log: RoundLog) -> Iterator[None]:
    """Record the start of every big forward and the end of every decoding call."""
    forward = runner_module.DecoderRunner.forward
    decode = search_module.speculative_decode
    device = next(big.parameters()).device
    starts: list[tuple[float, int]] = []

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    def timed_forward(runner, tokens):
        if runner.model is big:
            sync()
            starts.append((time.perf_counter(), tokens.shape[0]))
        return forward(runner, tokens)

    def timed_decode(*args, **kwargs):
        starts.clear()
        result = decode(*args, **kwargs)
        sync()
        ends = [start for start, _ in starts[1:]] + [time.perf_counter()]
        for index, ((start, rows), end) in enumerate(zip(starts, ends, strict=True)):
            log.rows.append(rows)
            log.seconds.append(end - start)
            log.first.append(index == 0)
        return result

    runner_module.DecoderRunner.forward = timed_forward
    search_module.speculative_decode = timed_decode
    try:
        yield
    finally:
        runner_module.DecoderRunner.forward = forward
        search_module.speculative_decode = decode


def fit_round_cost(rows: list[int], seconds: list[float]) -> tuple[float, float, float]:
    """Least squares ``seconds = fixed + per_row * rows``: ``(fixed, per_row, r2)``."""
    x = torch.tensor([[1.0, float(r)] for r in rows], dtype=torch.float64)
    y = torch.tensor(seconds, dtype=torch.float64)
    fixed, per_row = torch.linalg.lstsq(x, y[:, None]).solution.flatten().tolist()
    residual = y - (fixed + per_row * x[:, 1])
    spread = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / spread if spread > 0 else 1.0
    return fixed, per_row, r2


def bound(case: str, batch_size: int, inputs: int, wall: float, log: RoundLog) -> Bound:
    later = [(r, s) for r, s, first in zip(log.rows, log.seconds, log.first, strict=True) if not first]
    fixed, per_row, r2 = fit_round_cost([r for r, _ in later], [s for _, s in later])
    first_seconds = sum(s for s, first in zip(log.seconds, log.first, strict=True) if first)
    later_row_rounds = sum(r for r, _ in later)
    packed_rounds = math.ceil(later_row_rounds / batch_size)
    return Bound(
        case=case,
        batch_size=batch_size,
        inputs=inputs,
        wall_s=wall,
        rounds=len(log.rows),
        row_rounds=sum(log.rows),
        mean_rows=sum(log.rows) / max(1, len(log.rows)),
        fixed_ms=1000 * fixed,
        per_row_ms=1000 * per_row,
        fit_r2=r2,
        rounds_s=sum(log.seconds),
        packed_rounds=packed_rounds + sum(log.first),
        packed_s=first_seconds + packed_rounds * (fixed + per_row * batch_size),
    )


def speller_case(args, device: torch.device) -> tuple[torch.nn.Module, Callable[[int], object], int]:
    speculator = Seq2SeqSpeculator(device=device, dtype=args.torch_dtype)  # the shipped speller, its default proposer
    lines = (ROOT / "recipes" / "data" / "spelling_heldout.tsv").read_text(encoding="utf-8").splitlines()
    texts = [line.split("\t")[0] for line in lines[1:] if line.strip()][: args.inputs]
    return speculator.big, lambda size: speculator.correct(texts, batch_size=size), len(texts)


def whisper_case(args, device: torch.device) -> tuple[torch.nn.Module, Callable[[int], object], int]:
    from bench_asr import short_clips

    from seq2spec.default_models import load_whisper_base_pair

    big, draft, processor = load_whisper_base_pair(device=device, dtype=args.torch_dtype)
    speculator = Seq2SeqSpeculator(big, draft, processor)
    clips = short_clips()
    audio = [clips[i % len(clips)] for i in range(args.inputs)]

    def run(size: int) -> object:
        return speculator.transcribe(audio, sampling_rate=16000, batch_size=size, language="en")

    return big, run, len(audio)


CASES = {"speller": speller_case, "whisper": whisper_case}


def markdown(bounds: list[Bound], machine: str) -> str:
    lines = [
        "# Refilling finished rows: the most it could save\n",
        machine + "\n",
        "| case | batch | inputs | wall s | rounds | mean rows per round | round cost: fixed ms + ms per row (r²) "
        "| rounds s | full rounds | full rounds s (bound) | bound, share of wall |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for b in bounds:
        lines.append(
            f"| {b.case} | {b.batch_size} | {b.inputs} | {b.wall_s:.2f} | {b.rounds} | {b.mean_rows:.1f} "
            f"| {b.fixed_ms:.2f} + {b.per_row_ms:.3f} x rows ({b.fit_r2:.2f}) | {b.rounds_s:.2f} "
            f"| {b.packed_rounds} | {b.packed_s:.2f} | {100 * b.saving_share_of_wall:.1f}% |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["speller"], choices=sorted(CASES))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[16, 32])
    parser.add_argument("--inputs", type=int, default=512, help="inputs per case (clips repeat for whisper)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--name", default="refill_bound_cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.torch_dtype = getattr(torch, args.dtype)
    device = torch.device(args.device)
    bounds = []
    for case in args.cases:
        big, run, inputs = CASES[case](args, device)
        with torch.inference_mode():
            run(min(args.batch_sizes))  # warm-up, untimed
            for size in args.batch_sizes:
                log = RoundLog([], [], [])
                with round_timer(big, log):
                    start = time.perf_counter()
                    run(size)
                    if device.type == "cuda":
                        torch.cuda.synchronize()
                    wall = time.perf_counter() - start
                bounds.append(bound(case, size, inputs, wall, log))
                print(markdown(bounds[-1:], "").splitlines()[-1], flush=True)
    machine = (
        f"{processor_name() if device.type == 'cpu' else torch.cuda.get_device_name(device)}, "
        f"{args.threads} torch threads, torch {torch.__version__}, {args.dtype}"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.md").write_text(markdown(bounds, machine), encoding="utf-8")
    (args.out / f"{args.name}.json").write_text(
        json.dumps({"machine": machine, "bounds": [asdict(b) for b in bounds]}, indent=1), encoding="utf-8"
    )
    print(markdown(bounds, machine))


if __name__ == "__main__":
    main()
