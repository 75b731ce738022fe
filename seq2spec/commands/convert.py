"""``seq2spec convert-ct2``: a CTranslate2 (faster-whisper) Whisper directory into a transformers one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seq2spec.commands.flags import DTYPE_NAMES, torch_dtype


def run(args: argparse.Namespace) -> int:
    from seq2spec.whisper.ct2 import Ct2FormatError, DestinationError, convert_ct2_whisper

    try:
        destination = convert_ct2_whisper(
            args.source, args.destination, files=args.parts or None, dtype=torch_dtype(args.dtype)
        )
    except (FileNotFoundError, Ct2FormatError, DestinationError) as error:
        print(f"seq2spec convert-ct2: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # unreadable source, unwritable destination, disk full
        print(f"seq2spec convert-ct2: {error.strerror or error}: {error.filename or args.destination}", file=sys.stderr)
        return 2
    print(f"converted {args.source} -> {destination}")
    return 0


def add_parser(commands) -> argparse.ArgumentParser:
    convert = commands.add_parser(
        "convert-ct2",
        help="convert a CTranslate2 (faster-whisper) Whisper directory to a transformers one",
        description="Convert SOURCE (model.bin or model.bin.part*, config.json, tokenizer.json) into a "
        "WhisperForConditionalGeneration directory with its processor and generation config. DESTINATION must be "
        "new, empty, or an earlier conversion; it is written in one step when complete.",
    )
    convert.add_argument("source", type=Path)
    convert.add_argument("destination", type=Path)
    convert.add_argument("--parts", nargs="+", type=Path, help="model.bin parts in order, when not in SOURCE")
    convert.add_argument("--dtype", choices=DTYPE_NAMES, default="float32", help="dtype of the saved weights")
    convert.set_defaults(run=run)
    return convert
