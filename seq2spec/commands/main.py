"""The ``seq2spec`` command: ``correct``, ``transcribe``, ``serve``, ``distill-draft``, ``convert-ct2`` and ``demo``."""

from __future__ import annotations

import argparse
import sys

from seq2spec.commands import convert, correct, demo, distill, ray_cluster, serve, transcribe
from seq2spec.commands.stopping import exit_status, sigterm_as_interrupt


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seq2spec", description="Batched speculative decoding, identical to greedy.")
    commands = parser.add_subparsers(dest="command", required=True)
    correct.add_parser(commands).set_defaults(run_on_ray=ray_cluster.run_correct)
    transcribe.add_parser(commands).set_defaults(run_on_ray=ray_cluster.run_transcribe)
    serve.add_parser(commands)
    distill.add_parser(commands)
    convert.add_parser(commands)
    demo.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run = args.run_on_ray if getattr(args, "ray", False) else args.run
    with sigterm_as_interrupt():
        try:
            return run(args)
        except KeyboardInterrupt as stop:  # before any work was done (the commands report what they kept)
            print(f"seq2spec {args.command}: stopped", file=sys.stderr)
            return exit_status(stop)


if __name__ == "__main__":
    raise SystemExit(main())
