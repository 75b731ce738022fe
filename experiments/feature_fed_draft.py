"""Does a Whisper draft agree more with base when it is fed base's own decoder state? (EAGLE, Li et al. 2024)

A candidate measured offline, not a shipped draft. The shipped 2-layer draft reads the audio and the tokens; here it
also reads, with each token, base's last decoder state (after the final layer norm) at the position before it: a
linear map of that state, normalised, is added to the token's embedding. The map starts at zero, so training starts
from the shipped draft exactly. While drafting, the state of a proposed token's position is the draft's own (base has
not seen it yet); a round's last accepted token and base's bonus token are fed again with base's states, which the
verification forward has just computed, and the accepted proposals before them keep the draft's own.

Stages (each writes under ``--work-dir``):
  encode  clips, once: base's encoder output, greedy labels (``distill_whisper_draft.encode_chunk``), top-k, and
          base's last decoder state at every position. From a distillation work dir's manifest (``--manifest``,
          ``--split``, ``--voice``, ``--count``, ``--timestamp-share``) or from audio files (``--audio``; a file
          longer than 30 s is cut into 30-s windows, labelled with timestamps as long-form windows are).
  train   the shipped draft plus the map, fine-tuned on cross-entropy with base's next token and KL to its top-k
          (``distill_whisper_draft.distillation_loss``); each position is fed base's state, the draft's own, or the
          draft's own after one more pass, drawn at random, as drafting meets all three. ``--feature-lr-scale 0``
          keeps the map at zero: the same fine-tuning without the state (the control).
  eval    per encoded set, for the shipped draft and each ``--candidates`` checkpoint: teacher-forced agreement
          with base's next token (fed base's states, or the draft's own) and speculative rounds simulated against
          base's greedy labels as seq2spec drafts (up to ``--max-draft-tokens`` tokens, a round ending after a
          token the draft gave less than ``--min-draft-confidence``): tokens per big forward.

Figures: benchmarks/findings/whisper_drafts.md, "The six evaluation voices".
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import soundfile
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recipes" / "data"))

import distill_whisper_draft as distill  # noqa: E402

WINDOW_SECONDS = 30
ENCODE_BATCH = 8
TOP_K = 8
MAX_NEW_TOKENS = 200


class FeatureFedDraft(nn.Module):
    """A Whisper draft whose input at each position adds ``map(layer_norm(state))`` to the token's embedding,
    ``state`` being base's (or the draft's own) last decoder state at the position before."""

    def __init__(self, draft: nn.Module) -> None:
        super().__init__()
        self.draft = draft
        width = draft.config.d_model
        self.state_map = nn.Linear(width, width)
        nn.init.zeros_(self.state_map.weight)
        nn.init.zeros_(self.state_map.bias)

    def hidden(self, ids: torch.Tensor, states_before: torch.Tensor, encoded: torch.Tensor, cache=None) -> torch.Tensor:
        """The draft's last decoder state (after its final norm) at each of ``ids``, appended to ``cache`` if given."""
        decoder = self.draft.model.decoder
        width = states_before.shape[-1]
        embedded = decoder.embed_tokens(ids) + self.state_map(F.layer_norm(states_before, (width,)))
        output = decoder(
            inputs_embeds=embedded, encoder_hidden_states=encoded, past_key_values=cache, use_cache=cache is not None
        )
        return output.last_hidden_state

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.draft.proj_out(hidden)


def states_before(states: torch.Tensor) -> torch.Tensor:
    """``[rows, T, width]`` states moved one position on: position ``j`` gets ``j - 1``'s, the first zeros."""
    return torch.cat([torch.zeros_like(states[:, :1]), states[:, :-1]], dim=1)


# ----------------------------------------------------------------------------- encode


def audio_records(pattern: str, windows_dir: Path) -> tuple[list[dict], list[bool]]:
    """Records for the files matching ``pattern``; a file over 30 s becomes 30-s windows (written to
    ``windows_dir``), labelled with timestamps."""
    records, flags = [], []
    for path in sorted(glob.glob(pattern)):
        samples = distill.read_clip(Path(path))
        window = WINDOW_SECONDS * distill.RATE
        if len(samples) <= window:
            records.append({"path": path})
            flags.append(False)
            continue
        windows_dir.mkdir(parents=True, exist_ok=True)
        for index, start in enumerate(range(0, len(samples), window)):
            piece = samples[start : start + window]
            if len(piece) < 2 * distill.RATE:
                continue
            target = windows_dir / f"{Path(path).stem}_{index:03d}.wav"
            soundfile.write(target, piece.astype(np.float32), distill.RATE)
            records.append({"path": str(target)})
            flags.append(True)
    if not records:
        raise FileNotFoundError(f"--audio {pattern!r} matches no file")
    return records, flags


def manifest_records(args) -> tuple[list[dict], list[bool]]:
    lines = Path(args.manifest).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    chosen = [r for r in records if r["split"] == args.split and args.voice in (None, r["voice"])]
    if not chosen:
        raise ValueError(f"{args.manifest} has no clip of split {args.split!r} and voice {args.voice!r}")
    rng = random.Random(f"{args.seed}:{args.name}")
    rng.shuffle(chosen)
    chosen = chosen[: args.count] if args.count else chosen
    return chosen, [rng.random() < args.timestamp_share for _ in chosen]


def stage_encode(args) -> None:
    from seq2spec.default_models import load_whisper_base

    if (args.audio is None) == (args.manifest is None):
        raise SystemExit("encode: give --audio or --manifest (with --split)")
    folder = args.work_dir / "encoded" / args.name
    if args.audio is not None:
        records, flags = audio_records(args.audio, args.work_dir / "windows" / args.name)
    else:
        records, flags = manifest_records(args)
    big, processor = load_whisper_base()
    big.eval()
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for start in range(0, len(records), ENCODE_BATCH):
        path = folder / f"{start:06d}.pt"
        if path.is_file():
            continue
        rows = slice(start, start + ENCODE_BATCH)
        chunk = distill.encode_chunk(big, processor, records[rows], flags[rows], TOP_K, MAX_NEW_TOKENS)
        with torch.inference_mode():
            decoder = big.model.decoder(input_ids=chunk["ids"], encoder_hidden_states=chunk["encoded"].float())
        chunk["states"] = decoder.last_hidden_state.to(torch.float16)
        torch.save(chunk, path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
    print(f"{args.name}: {len(records)} clips in {time.perf_counter() - started:.0f} s", flush=True)


# ----------------------------------------------------------------------------- sets


def load_encoded(work_dir: Path, names: list[str]) -> list[dict]:
    """Every clip of the named encoded sets: encoder output, label ids, prompt length, base's states, top-k."""
    items = []
    for name in names:
        paths = sorted((work_dir / "encoded" / name).glob("*.pt"))
        if not paths:
            raise FileNotFoundError(f"{work_dir / 'encoded' / name}: no encoded clips; run --stage encode first")
        for path in paths:
            chunk = torch.load(path)
            for row in range(len(chunk["ids"])):
                length = int(chunk["lengths"][row])
                items.append(
                    {
                        "encoded": chunk["encoded"][row],
                        "ids": chunk["ids"][row, :length],
                        "prompt": int(chunk["prompt_lengths"][row]),
                        "states": chunk["states"][row, :length],
                        "top_ids": chunk["top_ids"][row, :length].long(),
                        "top_logprobs": chunk["top_logprobs"][row, :length].float(),
                    }
                )
    return items


def training_batch(items: list[dict], eos: int) -> dict:
    width = max(len(item["ids"]) for item in items)
    rows, top_k = len(items), items[0]["top_ids"].shape[-1]
    batch = {
        "ids": torch.full((rows, width), eos),
        "mask": torch.zeros(rows, width, dtype=torch.bool),
        "states": torch.zeros(rows, width, items[0]["states"].shape[-1]),
        "top_ids": torch.zeros(rows, width, top_k, dtype=torch.long),
        "top_logprobs": torch.full((rows, width, top_k), -1e4),
    }
    for row, item in enumerate(items):
        length = len(item["ids"])
        batch["ids"][row, :length] = item["ids"]
        batch["mask"][row, item["prompt"] - 1 : length - 1] = True  # positions whose next token is scored
        batch["states"][row, :length] = item["states"].float()
        batch["top_ids"][row, :length] = item["top_ids"]
        batch["top_logprobs"][row, :length] = item["top_logprobs"]
    batch["encoded"] = torch.stack([item["encoded"] for item in items]).float()
    return batch


# ----------------------------------------------------------------------------- train


def load_pair(checkpoint: Path | None = None, big: nn.Module | None = None):
    """Base (loaded and frozen, unless given) and the shipped draft with a state map, from ``checkpoint`` if given."""
    from seq2spec.default_models import load_whisper_base
    from seq2spec.whisper.draft import load_whisper_draft

    if big is None:
        big, _ = load_whisper_base()
        big.eval()
        for parameter in big.parameters():
            parameter.requires_grad_(False)
    model = FeatureFedDraft(load_whisper_draft(big))
    if checkpoint is not None:
        saved = torch.load(checkpoint)
        model.state_map.load_state_dict(saved["state_map"])
        model.draft.model.decoder.load_state_dict(saved["decoder"], strict=False)
    return big, model


def trainable_parameters(model: FeatureFedDraft, big: nn.Module) -> tuple[list, list]:
    """The map's parameters, and the draft's own ones (base's shared modules stay frozen)."""
    shared = {id(p) for p in big.parameters()}
    own = [p for p in model.draft.model.decoder.parameters() if id(p) not in shared]
    return list(model.state_map.parameters()), own


def stage_train(args) -> None:
    big, model = load_pair()
    head = model.draft.proj_out
    columns = torch.full((big.config.vocab_size,), -1, dtype=torch.long)
    columns[head.token_ids] = torch.arange(len(head.token_ids))
    items = load_encoded(args.work_dir, args.train_sets)
    mapping, own = trainable_parameters(model, big)
    scales = [args.lr * args.feature_lr_scale, args.lr]
    optimiser = torch.optim.AdamW([{"params": mapping}, {"params": own}], lr=args.lr, weight_decay=0.0)
    rng = random.Random(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    order: list[int] = []
    started = time.perf_counter()
    model.train()
    for step in range(args.steps):
        if len(order) < args.batch:
            order = list(range(len(items)))
            rng.shuffle(order)
        chosen, order = order[: args.batch], order[args.batch :]
        batch = training_batch([items[i] for i in chosen], big.generation_config.eos_token_id)
        encoded = batch["encoded"]
        with torch.no_grad():
            first = model.hidden(batch["ids"], states_before(batch["states"]), encoded)
            second = model.hidden(batch["ids"], states_before(first), encoded)
        draw = torch.rand(*batch["ids"].shape, 1, generator=generator)
        fed = torch.where(
            draw < 0.4,
            states_before(batch["states"]),
            torch.where(draw < 0.7, states_before(first), states_before(second)),
        )
        logits = F.linear(model.hidden(batch["ids"], fed, encoded), head.weight)
        loss, agreement = distill.distillation_loss(logits, batch, args.kl_weight, columns)
        warm = min(1.0, (step + 1) / args.warmup)
        decay = 0.5 * (1 + math.cos(math.pi * max(0, step - args.warmup) / max(1, args.steps - args.warmup)))
        for group, scale in zip(optimiser.param_groups, scales, strict=True):
            group["lr"] = scale * min(warm, decay)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(mapping + own, 1.0)
        optimiser.step()
        if step % 50 == 0 or step == args.steps - 1:
            elapsed = time.perf_counter() - started
            print(f"step {step} loss {loss.item():.3f} agreement {agreement.item():.3f} {elapsed:.0f} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    decoder_state = {k: v for k, v in model.draft.model.decoder.state_dict().items() if "embed" not in k}
    torch.save({"state_map": model.state_map.state_dict(), "decoder": decoder_state}, args.out)


# ----------------------------------------------------------------------------- eval


@torch.no_grad()
def teacher_forced_agreement(model: FeatureFedDraft, items: list[dict], own_states: bool = False) -> float:
    """Share of label positions where the draft's next token is base's, every position fed base's state before it
    (or, ``own_states``, the draft's own state of a first pass)."""
    hits = total = 0
    for item in items:
        ids, encoded = item["ids"][None], item["encoded"].float()[None]
        fed = states_before(item["states"].float()[None])
        hidden = model.hidden(ids, fed, encoded)
        if own_states:
            hidden = model.hidden(ids, states_before(hidden), encoded)
        predicted = model.logits(hidden)[0].argmax(-1)
        prompt = item["prompt"]
        hits += int((predicted[prompt - 1 : -1] == item["ids"][prompt:]).sum())
        total += len(item["ids"]) - prompt
    return hits / max(1, total)


@torch.no_grad()
def simulated_rounds(
    model: FeatureFedDraft,
    items: list[dict],
    *,
    max_draft_tokens: int,
    min_draft_confidence: float,
    eos: int,
    use_states: bool = True,
) -> tuple[int, int]:
    """(tokens, rounds) of speculative decoding against each clip's greedy labels, batch 1: a round drafts from
    the last known token, the big model keeps the proposals equal to its labels and adds its own next token.
    ``use_states=False`` feeds no state at all (the shipped draft as it runs)."""
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache

    tokens = rounds = 0
    for item in items:
        ids, encoded = item["ids"], item["encoded"].float()[None]
        states = item["states"].float()
        zero = torch.zeros_like(states[0])
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        fed = 0  # the cache holds positions < fed
        last = item["prompt"] - 1  # the last token known to both models
        while last < len(ids) - 1:
            known = torch.stack([states[j - 1] if j > 0 and use_states else zero for j in range(fed, last + 1)])
            hidden = model.hidden(ids[None, fed : last + 1], known[None], encoded, cache)[:, -1]
            proposals = []
            for _ in range(max_draft_tokens):
                scores = model.logits(hidden)[0].float()
                token = int(scores.argmax())
                proposals.append(token)
                if token == eos or float(scores.softmax(-1)[token]) < min_draft_confidence:
                    break
                if len(proposals) == max_draft_tokens:
                    break
                state = hidden if use_states else zero[None]
                hidden = model.hidden(torch.tensor([[token]]), state[:, None], encoded, cache)[:, -1]
            accepted = 0
            while (
                accepted < len(proposals)
                and last + 1 + accepted < len(ids)
                and proposals[accepted] == int(ids[last + 1 + accepted])
            ):
                accepted += 1
            gained = min(accepted + 1, len(ids) - 1 - last)
            tokens, rounds = tokens + gained, rounds + 1
            fed = last + accepted  # accepted proposals keep their entries; the last of them and the bonus are fed again
            last += gained
            surplus = cache.get_seq_length() - fed
            if surplus > 0:
                cache.crop(-surplus)
    return tokens, rounds


def stage_eval(args) -> None:
    sets = {}
    for spec in args.eval_sets:
        set_name, _, count = spec.partition(":")
        sets[set_name] = load_encoded(args.work_dir, [set_name])[: int(count or 0) or None]
    rows, big = [], None
    for checkpoint in [None, *args.candidates]:
        big, model = load_pair(checkpoint, big)
        model.eval()
        name = "shipped" if checkpoint is None else str(checkpoint)
        for set_name, items in sets.items():
            tokens, rounds = simulated_rounds(
                model,
                items,
                max_draft_tokens=args.max_draft_tokens,
                min_draft_confidence=args.min_draft_confidence,
                eos=big.generation_config.eos_token_id,
                use_states=checkpoint is not None,
            )
            row = {
                "draft": name,
                "set": set_name,
                "clips": len(items),
                "agreement_base_states": round(teacher_forced_agreement(model, items), 4),
                "agreement_own_states": round(teacher_forced_agreement(model, items, own_states=True), 4),
                "tokens_per_big_forward": round(tokens / rounds, 3),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", choices=["encode", "train", "eval"], required=True)
    parser.add_argument("--work-dir", type=Path, default=Path("runs/feature_fed"))
    parser.add_argument("--name", help="encode: the encoded set's name")
    parser.add_argument("--audio", help="encode: a file or glob of audio files")
    parser.add_argument("--manifest", help="encode: a distillation work dir's manifest.jsonl")
    parser.add_argument("--split", default="train")
    parser.add_argument("--voice", default=None, help="encode: only clips of this manifest voice")
    parser.add_argument("--count", type=int, default=0, help="encode: at most this many clips (0: all)")
    parser.add_argument("--timestamp-share", type=float, default=0.3)
    parser.add_argument("--train-sets", nargs="+", default=[])
    parser.add_argument("--steps", type=int, default=700)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--feature-lr-scale", type=float, default=0.1, help="the map's learning rate over --lr")
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--kl-weight", type=float, default=1.0)
    parser.add_argument("--eval-sets", nargs="+", default=[], help="eval: encoded sets, NAME or NAME:FIRST_CLIPS")
    parser.add_argument("--candidates", nargs="*", type=Path, default=[])
    parser.add_argument("--max-draft-tokens", type=int, default=10)
    parser.add_argument("--min-draft-confidence", type=float, default=0.7)
    parser.add_argument("--out", type=Path, help="train: the checkpoint; eval: a JSON of the rows")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.stage == "encode" and not args.name:
        parser.error("--stage encode needs --name")
    if args.stage == "train" and (not args.train_sets or args.out is None):
        parser.error("--stage train needs --train-sets and --out")
    if args.stage == "eval" and not args.eval_sets:
        parser.error("--stage eval needs --eval-sets")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    {"encode": stage_encode, "train": stage_train, "eval": stage_eval}[args.stage](args)


if __name__ == "__main__":
    main()
