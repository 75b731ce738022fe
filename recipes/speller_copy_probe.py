"""How many steps does a small T5 need before it learns to copy? A quick probe for planning speller training.

Trains a 3+3-layer, d_model-128 T5 (gated GELU, tied head) on the speller's sentences with the speller's
tokenizer (run ``train_speller.py --stage tokenizer`` first) and prints the mean loss of every 100 steps.
``--task copy`` uses the clean sentence as both input and target; ``--task correct`` uses the corrupted input.

    python recipes/speller_copy_probe.py --task copy --steps 2000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import speller_data  # noqa: E402
import train_speller  # noqa: E402

PROBE_SHAPE = {"d_model": 128, "d_kv": 32, "num_heads": 4, "d_ff": 512, "num_layers": 3, "num_decoder_layers": 3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=["copy", "correct"], default="copy")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--work-dir", type=Path, default=Path("runs/speller"), help="where the tokenizer is")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(2)
    tokenizer = train_speller.load_tokenizer(args)
    training, _ = train_speller.split_corpus()
    corruptor = speller_data.Corruptor(speller_data.load_typos(), clean_share=1.0 if args.task == "copy" else 0.2)
    model = train_speller.new_model(PROBE_SHAPE, args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    started, losses = time.time(), []
    for step in range(args.steps):
        for group in optimizer.param_groups:
            group["lr"] = args.lr * min(1.0, (step + 1) / 100)
        input_ids, mask, labels = train_speller.make_batch(
            tokenizer, training, corruptor, args.seed, step, args.batch_size
        )
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if (step + 1) % 100 == 0:
            recent = losses[-100:]
            print(
                f"step {step + 1}: mean loss {sum(recent) / len(recent):.3f} ({time.time() - started:.0f}s)", flush=True
            )


if __name__ == "__main__":
    main()
