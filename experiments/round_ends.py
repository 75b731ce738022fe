"""Where do the Whisper draft's speculative rounds end, and what would timestamps it got right be worth?

A measurement, not a decoding mode. Against base's greedy labels (sets encoded by ``feature_fed_draft.py --stage
encode``), at batch 1, each draft proposes rounds as seq2spec drafts them (up to ``--max-draft-tokens``, a round
ending after a token the draft gave less than ``--min-draft-confidence``), and each round is classed by how it ended:

- ``text``: the draft proposed another text token than base's;
- ``timestamp placement``: one of the two tokens is a timestamp and the other text: base ends a segment where the
  draft reads on (``base``), or the draft ends one where base reads on (``draft``);
- ``timestamp value``: both are timestamps, of different times;
- ``end of text``: one of the two is the end-of-text token;
- ``confidence``, ``length limit``, ``labels' end``: every proposal kept.

Then the rounds are simulated again with an oracle that corrects the draft's timestamps: where the draft's token
and base's differ and one of them is a timestamp, the draft proposes base's token (taken as confident) and drafts on
from it. ``values`` corrects only where both are timestamps, ``placement`` only where one is, ``both`` every such
token; ``exact`` also takes every timestamp of base's that the draft proposed itself as confident (a round no longer
ends after one the draft was unsure of): the most that exact timestamps could give this draft, in tokens per big
forward.

Last, how early base's own decoder state knows a segment's end time: for each timestamp that follows text, whether
base's best timestamp at the positions before (its state there, through its head, over the timestamp tokens only)
is already that timestamp.

    python experiments/feature_fed_draft.py --stage encode --name hl --audio heldout_long_form.wav
    python experiments/round_ends.py --eval-sets hl --out runs/round_ends.json

Figures: benchmarks/findings/whisper_drafts.md, "The six evaluation voices".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))

from draft_tree_bound import DraftStepper, matched  # noqa: E402
from feature_fed_draft import load_encoded  # noqa: E402

ORACLES = {"none": frozenset(), "values": frozenset({"value"}), "placement": frozenset({"placement"})}
ORACLES["both"] = ORACLES["values"] | ORACLES["placement"]
ORACLES["exact"] = ORACLES["both"] | {"confident"}
SHIPPED = "shipped"


@dataclass
class Tally:
    """Sums over the simulated rounds of one draft on one set."""

    tokens: int = 0
    rounds: int = 0
    ends: Counter = field(default_factory=Counter)  # rounds by how they ended

    @property
    def tokens_per_forward(self) -> float:
        return round(self.tokens / max(1, self.rounds), 3)


def timestamp_mismatch(proposed: int, label: int, first_timestamp: int) -> str | None:
    """``value`` where two different tokens are both timestamps, ``placement`` where one of them is, else None."""
    if proposed == label:
        return None
    timestamps = (proposed >= first_timestamp) + (label >= first_timestamp)
    return {2: "value", 1: "placement"}.get(timestamps)


def round_end(chain: list[int], labels: list[int], max_tokens: int, eos: int, first_timestamp: int) -> str:
    """How a round that proposed ``chain`` against base's ``labels`` ended (the classes of the module docstring)."""
    kept = matched(chain, labels)
    if kept == len(labels):
        return "labels' end"
    if kept < len(chain):
        proposed, label = chain[kept], labels[kept]
        if eos in (proposed, label):
            return "end of text"
        mismatch = timestamp_mismatch(proposed, label, first_timestamp)
        if mismatch == "value":
            return "timestamp value"
        if mismatch == "placement":
            return "timestamp placement: " + ("base" if label >= first_timestamp else "draft")
        return "text"
    return "length limit" if len(chain) == max_tokens else "confidence"


def drafted_round(
    stepper: DraftStepper,
    probs: torch.Tensor,
    labels: list[int],
    *,
    max_tokens: int,
    min_confidence: float,
    eos: int,
    first_timestamp: int,
    oracle: frozenset[str],
) -> list[int]:
    """One round's proposal from ``probs`` on, with the draft's timestamps corrected where ``oracle`` says; the last
    token is not fed to the draft."""
    chain: list[int] = []
    while True:
        token = int(probs.argmax())
        confidence = float(probs[token])
        if len(chain) < len(labels):
            label = labels[len(chain)]
            if timestamp_mismatch(token, label, first_timestamp) in oracle:
                token, confidence = label, 1.0
            elif "confident" in oracle and token == label >= first_timestamp:
                confidence = 1.0
        chain.append(token)
        if token == eos or confidence < min_confidence or len(chain) == max_tokens:
            return chain
        probs = stepper.feed([token])


def simulate(
    draft,
    items: list[dict],
    *,
    max_tokens: int,
    min_confidence: float,
    eos: int,
    first_timestamp: int,
    oracle: frozenset[str] = frozenset(),
) -> Tally:
    """Speculative rounds of ``draft`` against each clip's greedy labels, batch 1, each round's end classed."""
    tally = Tally()
    for item in items:
        ids = [int(t) for t in item["ids"]]
        stepper = DraftStepper(draft, item["encoded"].float()[None])
        last = item["prompt"] - 1  # the last token known to both models
        while last < len(ids) - 1:
            probs = stepper.feed(ids[stepper.fed : last + 1])
            labels = ids[last + 1 :]
            chain = drafted_round(
                stepper,
                probs,
                labels,
                max_tokens=max_tokens,
                min_confidence=min_confidence,
                eos=eos,
                first_timestamp=first_timestamp,
                oracle=oracle,
            )
            tally.ends[round_end(chain, labels, max_tokens, eos, first_timestamp)] += 1
            kept = matched(chain, labels)
            gained = min(kept + 1, len(labels))
            tally.tokens += gained
            tally.rounds += 1
            stepper.cut_to(last + kept)
            last += gained
    return tally


@torch.no_grad()
def timestamp_lead(big, items: list[dict], first_timestamp: int, eos: int, lead: int) -> dict[int, list[int]]:
    """For each timestamp after text in the labels: at 0, 1, ... ``lead`` - 1 positions before the one that predicts
    it, is base's best timestamp already that one? Returns {positions before: [hits, timestamps]}."""
    counts = {before: [0, 0] for before in range(lead)}
    head = big.get_output_embeddings().weight[first_timestamp:].float()
    for item in items:
        ids = [int(t) for t in item["ids"]]
        best = F.linear(item["states"].float(), head).argmax(-1) + first_timestamp
        for at in range(item["prompt"] + 1, len(ids)):  # a timestamp right after the prompt follows no text
            if ids[at] < first_timestamp or ids[at - 1] >= first_timestamp or ids[at] == eos:
                continue
            for before in range(lead):
                position = at - 1 - before  # base's state there predicts the token after it
                if position < item["prompt"] - 1:
                    break
                counts[before][0] += int(best[position]) == ids[at]
                counts[before][1] += 1
    return counts


def load_drafts(big, names: list[str]) -> dict[str, torch.nn.Module]:
    from seq2spec.whisper.draft import load_whisper_draft

    return {name: load_whisper_draft(big, None if name == SHIPPED else name).eval() for name in names}


def markdown(rows: list[dict]) -> str:
    kinds = sorted({kind for row in rows for kind in row["ends"]})
    lines = [
        "| set | draft | rounds | tokens per big forward | " + " | ".join(kinds) + " | " + " | ".join(ORACLES) + " |",
        "|---|---|---:|---:|" + "---:|" * (len(kinds) + len(ORACLES)),
    ]
    for row in rows:
        ends = [str(row["ends"].get(kind, 0)) for kind in kinds]
        oracles = [f"{row['oracles'][name]:.2f}" for name in ORACLES]
        lines.append(
            f"| {row['set']} | {row['draft']} | {row['rounds']} | {row['tokens_per_big_forward']:.2f} | "
            + " | ".join(ends + oracles)
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, default=Path("runs/feature_fed"))
    parser.add_argument("--eval-sets", nargs="+", required=True, help="encoded sets, NAME or NAME:FIRST_CLIPS")
    parser.add_argument("--drafts", nargs="+", default=[SHIPPED], help=f"'{SHIPPED}' or saved draft folders")
    parser.add_argument("--max-draft-tokens", type=int, default=10)
    parser.add_argument("--min-draft-confidence", type=float, default=0.7)
    parser.add_argument("--lead", type=int, default=4, help="positions before a segment's end timestamp to check")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, help="a JSON of the rows (and a .md table beside it)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from seq2spec.default_models import load_whisper_base

    big, _ = load_whisper_base()
    big.eval()
    drafts = load_drafts(big, args.drafts)
    eos = big.generation_config.eos_token_id
    first_timestamp = big.generation_config.no_timestamps_token_id + 1
    rows, leads = [], {}
    for spec in args.eval_sets:
        set_name, _, count = spec.partition(":")
        items = load_encoded(args.work_dir, [set_name])[: int(count or 0) or None]
        leads[set_name] = timestamp_lead(big, items, first_timestamp, eos, args.lead)
        print(json.dumps({"set": set_name, "timestamp_lead": leads[set_name]}), flush=True)
        for name, draft in drafts.items():
            options = dict(
                max_tokens=args.max_draft_tokens,
                min_confidence=args.min_draft_confidence,
                eos=eos,
                first_timestamp=first_timestamp,
            )
            with torch.inference_mode():
                tallies = {oracle: simulate(draft, items, oracle=ORACLES[oracle], **options) for oracle in ORACLES}
            plain = tallies["none"]
            row = {
                "set": set_name,
                "clips": len(items),
                "draft": name,
                "rounds": plain.rounds,
                "tokens": plain.tokens,
                "tokens_per_big_forward": plain.tokens_per_forward,
                "ends": dict(plain.ends.most_common()),
                "oracles": {oracle: tally.tokens_per_forward for oracle, tally in tallies.items()},
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(markdown(rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result = {"rows": rows, "timestamp_lead": leads, "options": vars(args) | {"work_dir": str(args.work_dir)}}
        args.out.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
        args.out.with_suffix(".md").write_text(markdown(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
