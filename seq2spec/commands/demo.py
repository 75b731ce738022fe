"""``seq2spec demo``: greedy decoding against seq2spec on a built-in random pair (no download needed)."""

from __future__ import annotations

import argparse
import time

from seq2spec.commands.flags import add_speculation_flags, positive_int, speculation_changes


def run(args: argparse.Namespace) -> int:
    """Greedy versus seq2spec on a built-in random model pair: identical outputs, fewer big-model forwards."""
    import torch

    from seq2spec import Seq2SeqSpeculator
    from seq2spec.commands.toys import build_toy_pair, random_sources

    torch.set_num_threads(args.threads)
    big, draft = build_toy_pair(args.pair)
    input_ids, mask = random_sources(args.rows, seed=0, vocab_size=big.config.vocab_size, max_length=24)
    print(
        f"toy pair '{args.pair}': big {sum(p.numel() for p in big.parameters()) / 1e6:.1f}M parameters, "
        f"draft decoder {draft.config.num_decoder_layers} of {big.config.num_decoder_layers} layers, shared encoder"
    )
    start = time.perf_counter()
    expected = big.generate(input_ids, attention_mask=mask, max_new_tokens=args.max_new_tokens, do_sample=False)
    greedy_seconds = time.perf_counter() - start
    speculator = Seq2SeqSpeculator(big, draft, **speculation_changes(args))
    start = time.perf_counter()
    output = speculator.generate(input_ids, mask, max_new_tokens=args.max_new_tokens)
    seconds = time.perf_counter() - start
    identical = output.shape == expected.shape and torch.equal(output, expected)
    stats = speculator.last_stats
    print(
        f"batch of {args.rows}: greedy {greedy_seconds:.2f}s, seq2spec {seconds:.2f}s "
        f"(x{greedy_seconds / seconds:.2f}); outputs identical: {identical}"
    )
    print(
        f"acceptance {stats.acceptance_rate:.2f}, {stats.tokens_per_big_forward:.2f} tokens per big row-forward, "
        f"{stats.big_forwards} big decoder calls for {stats.generated_tokens} tokens"
    )
    return 0 if identical else 1


def add_parser(commands) -> argparse.ArgumentParser:
    demo = commands.add_parser("demo", help="greedy versus seq2spec on a built-in random model pair")
    demo.add_argument(
        "--pair", choices=["small", "large"], default="small", help="the random T5 pair's size (default small)"
    )
    demo.add_argument("--rows", type=positive_int, default=16, help="rows of the random batch (default 16)")
    demo.add_argument("--max-new-tokens", type=positive_int, default=64, help="tokens per row at most (default 64)")
    demo.add_argument("--threads", type=positive_int, default=2, help="CPU threads for torch (default 2)")
    add_speculation_flags(demo)
    demo.set_defaults(run=run)
    return demo
