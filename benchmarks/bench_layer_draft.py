"""A draft made of a model's own decoder layers, distilled on lines like the user's, against a separately trained draft.

The model is the shipped speller's big T5 (4 decoder layers, d_model 384; a real trained model, not a random one),
standing for a user's model that has no draft. Its sibling, the shipped distilled draft (a model of its own: 4-layer
encoder and 2-layer decoder at d_model 128, the big model's seed cut to two decoder layers and distilled on the
training corpus, about 2,400 steps of 256 sentences on an H100; ``seq2spec/assets/speller/MODEL_CARD.md``), is the
draft a team that trains one would have. Layer drafts (``seq2spec.drafts.own_layers.layer_draft``: copies of the
chosen decoder layers, reading the big encoder's output, sharing embeddings and head) are measured untrained and after
``distill_layer_draft`` on ``--train-lines`` misspelled sentences of the speller's training corpus
(recipes/speller_data.py; the held-out share never used), labelled by the big model itself.

Evaluation: the first ``--eval-lines`` sources of recipes/data/spelling_heldout.tsv (no sentence of it in training), in
batches of ``--batch-size`` sorted by length, every side's tokens compared with greedy's. After an untimed pass of
greedy, the sides run in turn for ``--repeats`` rounds; the speedup is the median over rounds of greedy's time over
the side's.
Writes ``results/<name>.{json,md,png}``.

    python benchmarks/bench_layer_draft.py --layers 0 --layers 0,3 --steps 600 --train-lines 3000
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "recipes"))
sys.path.insert(0, str(Path(__file__).parent))
from bench_core import processor_name  # noqa: E402
from speller_data import Corruptor, is_held_out, load_corpus, load_typos  # noqa: E402

from seq2spec import Seq2SeqSpeculator  # noqa: E402
from seq2spec.default_models import load_speller  # noqa: E402
from seq2spec.drafts.distill import DistillOptions, distill_layer_draft, label_batch  # noqa: E402
from seq2spec.drafts.own_layers import layer_draft, own_layer_list  # noqa: E402

HELD_OUT = ROOT / "recipes" / "data" / "spelling_heldout.tsv"
TRAINING_BATCH = 32
MAX_NEW_TOKENS = 128


@dataclass
class Row:
    draft: str
    own_parameters: int
    distil_minutes: float | None  # labelling the training lines and training
    agreement_held_out: float | None  # teacher-forced, on the held-out share of the training lines' batches
    seconds: float
    speedup: float
    tokens_per_big_row_forward: float | None
    identical: bool


def evaluation_lines(count: int) -> tuple[list[str], set[str]]:
    rows = [line.split("\t") for line in HELD_OUT.read_text(encoding="utf-8").splitlines()[1:]]
    return [source for source, _ in rows[:count]], {reference for _, reference in rows}


def training_lines(count: int, avoid: set[str], seed: int = 0) -> list[str]:
    """Misspelled sentences of the speller's corpus outside its held-out share and the evaluation set."""
    rng = random.Random(seed)
    corpus = [s for s in load_corpus() if not is_held_out(s) and s not in avoid and len(s) <= 140]
    rng.shuffle(corpus)
    corrupt = Corruptor(load_typos())
    return sorted((corrupt(sentence, rng) for sentence in corpus[:count]), key=len)


def batches_of(tokenizer, lines: list[str], size: int) -> list[dict]:
    ordered = sorted(lines, key=len)
    return [
        dict(tokenizer(ordered[i : i + size], return_tensors="pt", padding=True)) for i in range(0, len(ordered), size)
    ]


def decode(big, draft, batches) -> tuple[float, list[torch.Tensor], float | None]:
    speculator = None if draft is None else Seq2SeqSpeculator(big, draft)
    outputs, generated, row_forwards = [], 0, 0
    started = time.perf_counter()
    for batch in batches:
        if speculator is None:
            outputs.append(big.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=MAX_NEW_TOKENS))
        else:
            outputs.append(speculator.generate(**batch, max_new_tokens=MAX_NEW_TOKENS))
            generated += speculator.last_stats.generated_tokens
            row_forwards += speculator.last_stats.big_row_forwards
    return time.perf_counter() - started, outputs, (generated / row_forwards if row_forwards else None)


def make_sides(args, big, shipped, training) -> list[tuple[str, object, int, float | None, float | None]]:
    """(name, draft, own parameters, distil minutes, held-out agreement) of every side, drafts distilled here."""
    sides = [("none (greedy)", None, 0, None, None)]
    sides.append(
        ("shipped distilled draft (own model)", shipped, sum(p.numel() for p in shipped.parameters()), None, None)
    )
    options = DistillOptions(steps=args.steps, max_new_tokens=MAX_NEW_TOKENS)
    started = time.perf_counter()
    labelled = [label_batch(big, batch, options) for batch in training]  # once, for every layer set
    labelling_minutes = (time.perf_counter() - started) / 60
    for layers in args.layers:
        name = "layers " + ",".join(map(str, layers))
        untrained, draft = layer_draft(big, layers), layer_draft(big, layers)
        own = sum(p.numel() for p in own_layer_list(draft).parameters())
        sides.append((f"{name}, untrained", untrained, own, None, None))
        stats = distill_layer_draft(big, draft, labelled, options, progress=print)
        print(stats, flush=True)
        minutes = round(labelling_minutes + stats.training_seconds / 60, 1)
        sides.append((f"{name}, distilled {args.steps} steps", draft, own, minutes, stats.agreement_after))
    return sides


def bench(args) -> list[Row]:
    big, shipped, tokenizer = load_speller()
    sources, references = evaluation_lines(args.eval_lines)
    evaluation = batches_of(tokenizer, sources, args.batch_size)
    training = batches_of(tokenizer, training_lines(args.train_lines, references), TRAINING_BATCH)
    sides = make_sides(args, big, shipped, training)
    decode(big, None, evaluation[:2])  # untimed: first calls allocate
    seconds = {name: [] for name, *_ in sides}
    identical, per_forward, expected = {}, {}, None
    for _ in range(args.repeats):  # every side in turn, round after round: the machine's drift falls on all
        for name, draft, *_ in sides:
            elapsed, outputs, per_forward[name] = decode(big, draft, evaluation)
            expected = outputs if draft is None else expected
            same = all(torch.equal(a, b) for a, b in zip(outputs, expected, strict=True))
            identical[name] = identical.get(name, True) and same
            seconds[name].append(elapsed)
    greedy = seconds["none (greedy)"]
    rows = []
    for name, _, own, minutes, agreement in sides:
        ratio = statistics.median(g / t for g, t in zip(greedy, seconds[name], strict=True))
        median = statistics.median(seconds[name])
        rows.append(Row(name, own, minutes, agreement, median, ratio, per_forward[name] or 1.0, identical[name]))
    return rows


def markdown(rows: list[Row], args, machine: str) -> str:
    lines = [
        f"Shipped speller's big T5 as the user's model; {args.eval_lines} held-out lines in batches of "
        f"{args.batch_size}; "
        f"distilled on {args.train_lines} training lines, {args.steps} steps; {machine}; the sides timed in turn, "
        f"{args.repeats} rounds: median seconds, and the median over rounds of greedy's time over the side's.",
        "",
        "| draft | own parameters | distil min | held-out agreement | tokens/big row-forward | speedup | identical |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        agreement = "" if r.agreement_held_out is None else f"{r.agreement_held_out:.3f}"
        per_forward = "" if r.tokens_per_big_row_forward is None else f"{r.tokens_per_big_row_forward:.2f}"
        minutes = "" if r.distil_minutes is None else f"{r.distil_minutes}"
        lines.append(
            f"| {r.draft} | {r.own_parameters:,} | {minutes} | {agreement} | {per_forward} | {r.speedup:.2f}x | "
            f"{'yes' if r.identical else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    figure, axis = plt.subplots(figsize=(7, 0.5 + 0.45 * len(rows)))
    axis.barh([r.draft for r in rows][::-1], [r.speedup for r in rows][::-1])
    axis.axvline(1.0, color="gray", linewidth=0.8)
    axis.set_xlabel("speed against the big model's greedy generate")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", action="append", type=lambda text: tuple(int(x) for x in text.split(",")))
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--train-lines", type=int, default=3000)
    parser.add_argument("--eval-lines", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=32, help="held-out lines decoded together")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of timing, every side once a round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--name", default="layer_draft_cpu")
    args = parser.parse_args()
    args.layers = args.layers or [(0,), (0, 3)]
    torch.set_num_threads(args.threads)
    rows = bench(args)
    machine = f"CPU {processor_name()}, {args.threads} threads, torch {torch.__version__}"
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "arguments": {k: v for k, v in vars(args).items() if k != "out"}}
    payload["rows"] = [asdict(r) for r in rows]
    (args.out / f"{args.name}.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(rows, args, machine))
    plot(rows, args.out / f"{args.name}.png")
    print(markdown(rows, args, machine))


if __name__ == "__main__":
    main()
