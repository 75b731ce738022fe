"""Would drafting several branches lift the Whisper draft's tokens per big forward, and what would it cost here?

A candidate measured offline, not a decoding mode. seq2spec's Whisper draft proposes one chain per row; a draft tree
(SpecInfer, Medusa, EAGLE-2) also proposes alternatives, and the big model checks the whole tree in one forward. This
script simulates, at batch 1, against base's greedy labels (encoded once by ``feature_fed_draft.py --stage
encode``), the shipped draft's chain as seq2spec drafts it (up to ``--max-draft-tokens``, a round ending after a token
below ``--min-draft-confidence``) and trees grown from it:

- ``chain``: the chain alone (what seq2spec runs);
- ``leaves``: beside each chain token, the draft's second choice at that position as a leaf. Where the chain breaks,
  base's own token there is known anyway (the bonus); a leaf equal to it adds the token after it, which base computes
  at the leaf;
- ``leaves below P``: those leaves only where the draft gave its chain token less than P;
- ``branch M``: at the chain's least confident position, the draft's second choice continued by up to M draft tokens
  (the same stopping rule), a second chain that base checks beside the first.

Per tree: tokens per big forward, the tokens the big forward is fed per round (its rows: the last known token, the
chain, the tree's other nodes) and draft steps per round. ``--time-forwards`` then times base's decoder forward and
vocabulary head at batch 1 for each number of fed tokens over a cache of ``--cache-tokens`` (the module's own forward,
causal over the fed tokens; a tree needs a tree-shaped mask, which costs the same arithmetic), and each tree's time per
token is projected from its rounds' fed tokens and draft steps (one draft step timed too): forwards only, without the
loop's logits processing, which grows with the fed tokens as well.

    python experiments/feature_fed_draft.py --stage encode --name evl --audio natural_long_form.wav
    python experiments/draft_tree_bound.py --eval-sets evl ev --time-forwards --out runs/tree_bound.json

Figures: benchmarks/findings/whisper_drafts.md, "The six evaluation voices".
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers.cache_utils import DynamicCache, EncoderDecoderCache

sys.path.insert(0, str(Path(__file__).resolve().parent))

from feature_fed_draft import load_encoded  # noqa: E402


@dataclass(frozen=True)
class Tree:
    """A tree shape grown from the draft's chain: ``leaves_below`` (None: no leaves; 1.0: a leaf at every chain
    position) and ``branch_tokens`` (0: no branch)."""

    name: str
    leaves_below: float | None = None
    branch_tokens: int = 0


@dataclass
class Tally:
    """Sums over the simulated rounds of one tree on one set."""

    tokens: int = 0
    rounds: int = 0
    draft_steps: int = 0
    tree_hits: int = 0  # rounds where a node off the chain added tokens
    fed_counts: Counter = field(default_factory=Counter)  # rounds by the number of tokens the big forward is fed

    @property
    def fed(self) -> int:
        """Tokens fed to the big forwards, over all rounds."""
        return sum(count * rounds for count, rounds in self.fed_counts.items())

    def row(self) -> dict:
        return {
            "tokens_per_big_forward": round(self.tokens / max(1, self.rounds), 3),
            "fed_per_forward": round(self.fed / max(1, self.rounds), 2),
            "draft_steps_per_forward": round(self.draft_steps / max(1, self.rounds), 2),
            "rounds_helped": round(self.tree_hits / max(1, self.rounds), 3),
            "rounds": self.rounds,
            "tokens": self.tokens,
        }


@dataclass
class Step:
    """One drafted token with the draft's probability for it and its second choice."""

    token: int
    confidence: float
    second: int


class DraftStepper:
    """The shipped draft's decoder over one clip's encoder output, with a cache it can cut back."""

    def __init__(self, draft, encoded: torch.Tensor) -> None:
        self.draft, self.encoded = draft, encoded
        self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        self.steps = 0

    @property
    def fed(self) -> int:
        return self.cache.get_seq_length()

    def cut_to(self, length: int) -> None:
        surplus = self.fed - length
        if surplus > 0:
            self.cache.crop(-surplus)

    def feed(self, tokens: list[int]) -> torch.Tensor:
        """The draft's next-token probabilities after ``tokens`` appended to the cache."""
        self.steps += 1
        output = self.draft.model.decoder(
            input_ids=torch.tensor([tokens]),
            encoder_hidden_states=self.encoded,
            past_key_values=self.cache,
            use_cache=True,
        )
        return self.draft.proj_out(output.last_hidden_state[:, -1]).float()[0].softmax(-1)

    def chain(self, probs: torch.Tensor, limit: int, min_confidence: float, eos: int) -> list[Step]:
        """Up to ``limit`` greedy tokens from ``probs`` on, stopping after an end token or a token below
        ``min_confidence``; the last token is not fed."""
        steps: list[Step] = []
        while True:
            top = probs.topk(2)
            token, confidence = int(top.indices[0]), float(top.values[0])
            steps.append(Step(token, confidence, int(top.indices[1])))
            if token == eos or confidence < min_confidence or len(steps) == limit:
                return steps
            probs = self.feed([token])


def matched(proposed: list[int], labels: list[int]) -> int:
    count = 0
    while count < len(proposed) and count < len(labels) and proposed[count] == labels[count]:
        count += 1
    return count


def simulate(draft, items: list[dict], tree: Tree, *, max_tokens: int, min_confidence: float, eos: int) -> Tally:
    """Speculative rounds of ``tree`` against each clip's greedy labels, batch 1."""
    tally = Tally()
    for item in items:
        ids = [int(t) for t in item["ids"]]
        stepper = DraftStepper(draft, item["encoded"].float()[None])
        last = item["prompt"] - 1  # the last token known to both models
        while last < len(ids) - 1:
            probs = stepper.feed(ids[stepper.fed : last + 1])
            chain = stepper.chain(probs, max_tokens, min_confidence, eos)
            labels = ids[last + 1 :]
            accepted = matched([s.token for s in chain], labels)
            broke = accepted < min(len(chain), len(labels))  # base's own token differs from the chain's there
            gained = accepted + 1
            fed = 1 + len(chain)
            keep = last + accepted
            if tree.leaves_below is not None:
                with_leaf = [i for i, s in enumerate(chain) if s.confidence < tree.leaves_below]
                fed += len(with_leaf)
                if broke and accepted in with_leaf and chain[accepted].second == labels[accepted]:
                    gained = accepted + 2
            if tree.branch_tokens:
                at = min(range(len(chain)), key=lambda i: chain[i].confidence)
                stepper.cut_to(last + 1 + at)
                branch = [chain[at].second]
                if branch[0] != eos:
                    probs = stepper.feed([branch[0]])
                    branch += [s.token for s in stepper.chain(probs, tree.branch_tokens, min_confidence, eos)]
                fed += len(branch)
                if broke and accepted == at and branch[0] == labels[at]:
                    gained = max(gained, at + 1 + matched(branch[1:], labels[at + 1 :]) + 1)
                keep = min(keep, last + at)
            remaining = len(ids) - 1 - last
            helped = min(gained, remaining) > min(accepted + 1, remaining)
            gained = min(gained, remaining)
            tally.tokens += gained
            tally.rounds += 1
            tally.fed_counts[fed] += 1
            tally.tree_hits += helped
            last += gained
            stepper.cut_to(min(keep, last))
        tally.draft_steps += stepper.steps
    return tally


@torch.no_grad()
def forward_times(big, draft, fed_counts: list[int], cache_tokens: int, repeats: int) -> tuple[dict[int, float], float]:
    """Median seconds of base's decoder forward plus vocabulary head at batch 1 for each number of fed tokens over a
    cache of ``cache_tokens``, and of one step of ``draft`` (one token)."""
    generator = torch.Generator().manual_seed(0)
    encoded = torch.randn(1, 1500, big.config.d_model, generator=generator)
    tokens = torch.randint(0, 50000, (1, cache_tokens + max(fed_counts)), generator=generator)

    def timed(model, count: int) -> float:
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        decoder = model.model.decoder
        decoder(
            input_ids=tokens[:, :cache_tokens], encoder_hidden_states=encoded, past_key_values=cache, use_cache=True
        )
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            hidden = decoder(
                input_ids=tokens[:, cache_tokens : cache_tokens + count],
                encoder_hidden_states=encoded,
                past_key_values=cache,
                use_cache=True,
            ).last_hidden_state
            model.proj_out(hidden)
            times.append(time.perf_counter() - started)
            cache.crop(-count)
        return statistics.median(times)

    return {count: timed(big, count) for count in fed_counts}, timed(draft, 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, default=Path("runs/feature_fed"))
    parser.add_argument("--eval-sets", nargs="+", required=True, help="encoded sets, NAME or NAME:FIRST_CLIPS")
    parser.add_argument("--max-draft-tokens", type=int, default=10)
    parser.add_argument("--min-draft-confidence", type=float, default=0.7)
    parser.add_argument("--leaves-below", type=float, nargs="*", default=[1.0, 0.9])
    parser.add_argument("--branch-tokens", type=int, nargs="*", default=[3, 10])
    parser.add_argument("--time-forwards", action="store_true", help="time base's forwards and project each tree")
    parser.add_argument("--cache-tokens", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from seq2spec.default_models import load_whisper_base
    from seq2spec.whisper.draft import load_whisper_draft

    big, _ = load_whisper_base()
    big.eval()
    draft = load_whisper_draft(big)
    draft.eval()
    eos = big.generation_config.eos_token_id
    trees = [Tree("chain")]
    trees += [Tree("leaves" if p >= 1 else f"leaves below {p:g}", leaves_below=p) for p in args.leaves_below]
    trees += [Tree(f"branch {m}", branch_tokens=m) for m in args.branch_tokens]
    rows = []
    for spec in args.eval_sets:
        set_name, _, count = spec.partition(":")
        items = load_encoded(args.work_dir, [set_name])[: int(count or 0) or None]
        for tree in trees:
            with torch.inference_mode():
                tally = simulate(
                    draft,
                    items,
                    tree,
                    max_tokens=args.max_draft_tokens,
                    min_confidence=args.min_draft_confidence,
                    eos=eos,
                )
            row = {"set": set_name, "clips": len(items), "tree": tree.name, **tally.row()}
            print(json.dumps(row), flush=True)
            rows.append((row, tally))
    result: dict = {"rows": [row for row, _ in rows]}
    if args.time_forwards:
        fed_counts = list(range(1, 2 * args.max_draft_tokens + 4))
        times, draft_step = forward_times(big, draft, fed_counts, args.cache_tokens, args.repeats)
        result["forward_seconds"] = {str(count): round(seconds, 5) for count, seconds in times.items()}
        result["draft_step_seconds"] = round(draft_step, 5)
        for row, tally in rows:
            forwards = sum(times[min(count, max(fed_counts))] * n for count, n in tally.fed_counts.items())
            seconds = forwards + tally.draft_steps * draft_step
            row["projected_ms_per_token"] = round(1000 * seconds / tally.tokens, 2)
            print(json.dumps(row), flush=True)
        print(json.dumps({"forward_seconds": result["forward_seconds"], "draft_step_seconds": draft_step}))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
