"""Flags the commands share: speculation options and spelling settings (generated from ``SpeculationOptions`` and
``SpellingSettings``), runtime, and Ray."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import MISSING, fields
from typing import Any

from seq2spec.default_models import SPELLER_SETTINGS
from seq2spec.memory import retain_freed_memory
from seq2spec.options import SpeculationOptions
from seq2spec.spelling.protection import rule_names
from seq2spec.spelling.settings import SpellingSettings

DTYPE_NAMES = ("float32", "float16", "bfloat16")
RUN_DTYPE_NAMES = (*DTYPE_NAMES, "int8")  # int8: seq2spec's int8 mode on a CPU (seq2spec.int8)


def flag_name(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def add_speculation_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per ``SpeculationOptions`` field, with its help text; a flag left out keeps the draft's tuned value
    (the shipped drafts carry theirs) or else the dataclass default."""
    group = parser.add_argument_group(
        "speculation (speed only, never the output; unset flags keep the draft's tuned options, else the defaults)"
    )
    for option in fields(SpeculationOptions):
        default = option.default if option.default is not MISSING else None
        text = f"{option.metadata['help']} (default {default})"
        choices = option.metadata.get("choices")
        if isinstance(default, bool):
            group.add_argument(
                flag_name(option.name), dest=option.name, action=argparse.BooleanOptionalAction, default=None, help=text
            )
        else:
            group.add_argument(
                flag_name(option.name),
                dest=option.name,
                type=str if choices else type(default),
                choices=choices,
                default=None,
                metavar=None if choices else option.name.split("_")[-1].upper(),
                help=text,
            )


def speculation_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The speculation options set on the command line (to apply over the draft's tuned ones)."""
    return {name: getattr(args, name) for name in SpeculationOptions.field_names() if getattr(args, name) is not None}


def draft_keyword(draft: str | None) -> dict[str, Any]:
    """``--draft``'s value as ``Seq2SeqSpeculator``'s keyword: nothing when not given (the model's own default),
    None for 'none', else the name, path or 'input-copy'."""
    return {} if draft is None else {"draft": None if draft == "none" else draft}


def language_code(text: str) -> str:
    """``--language``: a language code (checked as ``SpellingSettings`` checks it), or auto (None: told per text)."""
    if text.lower() == "auto":
        return "auto"
    try:
        return SpellingSettings(language=text).language
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_spelling_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per ``SpellingSettings`` field a command line can give, with its help text; a flag left out keeps the
    model's own setting (the shipped speller carries its own) or else the dataclass default."""
    group = parser.add_argument_group(
        "text steps around the model (unset flags keep the model's own settings: the shipped speller's, else the "
        "defaults)"
    )
    for setting in SpellingSettings.flag_fields():
        shipped = getattr(SPELLER_SETTINGS, setting.name)
        default = f"default {setting.default}"
        if shipped != setting.default:
            default += f"; the shipped speller: {shipped}"
        text = f"{setting.metadata['help']} ({default})"
        if isinstance(setting.default, bool):
            kind = {"action": argparse.BooleanOptionalAction}
        elif setting.name == "protection_off":
            kind = {"type": rule_names_list, "metavar": "RULE,RULE"}
        elif setting.name == "split_longer_than":
            kind, text = {"type": nonnegative_int, "metavar": "CHARS"}, text + "; 0: whole"
        elif setting.name == "language":
            kind = {"type": language_code, "metavar": "CODE"}
        else:
            kind = {"type": float, "metavar": "NATS"}
        group.add_argument(flag_name(setting.name), dest=setting.name, default=None, help=text, **kind)


def spelling_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The spelling settings set on the command line (to apply over the model's own); ``--split-longer-than 0`` is
    None, every text whole."""
    changes = {name: getattr(args, name, None) for name in SpellingSettings.field_names()}
    changes = {name: value for name, value in changes.items() if value is not None}
    if changes.get("split_longer_than") == 0:
        changes["split_longer_than"] = None
    if changes.get("language") == "auto":
        changes["language"] = None
    return changes


def device_problem(text: str) -> str | None:
    """Why torch cannot run on ``--device`` here (a name it does not know, CUDA it does not see), or None."""
    if text == "cpu":  # the default: no torch import needed
        return None
    import torch

    try:
        device = torch.device(text)
    except RuntimeError:
        return f"{text!r} is not a device name (cpu, cuda, cuda:1, mps, ...)"
    if device.type == "cuda":
        if not torch.cuda.is_available():
            build = "built without CUDA" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
            return f"{text}: torch {torch.__version__} ({build}) sees no CUDA device"
        if device.index is not None and device.index >= torch.cuda.device_count():
            return f"{text}: torch sees {torch.cuda.device_count()} CUDA device(s)"
    return None


def add_runtime_flags(parser: argparse.ArgumentParser, *, dtypes: tuple[str, ...] = RUN_DTYPE_NAMES) -> None:
    parser.add_argument("--device", default="cpu", help="where the models run: cpu, cuda, cuda:1, ... (default cpu)")
    parser.add_argument(
        "--dtype",
        choices=dtypes,
        default="float32",
        help="the models' precision (default float32); int8, on a CPU: int8 linear layers, output identical to the "
        "int8 model's own greedy decoding (transcripts may differ slightly from float32's)",
    )
    parser.add_argument("--threads", type=positive_int, help="CPU threads for torch (default: torch's own choice)")


def torch_dtype(name: str):
    """The torch dtype of a --dtype name; "int8" stays a name (the int8 mode, not a tensor dtype)."""
    if name == "int8":
        return name
    import torch

    return getattr(torch, name)


def apply_process_settings(args: argparse.Namespace) -> None:
    """--threads, and glibc keeping freed memory for reuse (``seq2spec.memory``): a command is one long job. A
    ``--device`` torch cannot run on here stops the command (exit status 2) before any model is loaded."""
    problem = device_problem(getattr(args, "device", "cpu"))
    if problem is not None:
        print(f"seq2spec {args.command}: --device {problem}", file=sys.stderr)
        raise SystemExit(2)
    retain_freed_memory()
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)


def _whole_number(text: str, smallest: int, expected: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if value < smallest:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, 1, "a positive whole number")


def nonnegative_int(text: str) -> int:
    return _whole_number(text, 0, "zero or a positive whole number")


def rule_names_list(text: str) -> tuple[str, ...]:
    """Protection rule names separated by commas, each one ``rule_names()`` knows."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = sorted(set(names) - set(rule_names()))
    if unknown:
        known = ", ".join(rule_names())
        raise argparse.ArgumentTypeError(f"unknown protection rule(s) {unknown}; the rules are: {known}")
    return names


def add_ray_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Ray (scale out; needs seq2spec[ray])")
    group.add_argument("--ray", action="store_true", help="run on Ray Data; --out is then a directory")
    group.add_argument("--ray-address", help="an existing cluster ('auto', 'ray://head:10001'); default: start locally")
    group.add_argument("--num-actors", type=positive_int, default=1, help="model replicas (actors) to run (default 1)")
    group.add_argument("--cpus-per-actor", type=float, default=1, help="CPUs Ray reserves per actor (default 1)")
    group.add_argument("--threads-per-actor", type=positive_int, help="torch threads per actor (default: CPUs)")
    group.add_argument(
        "--gpus-per-actor", type=float, help="GPUs per actor (default 1 with --device cuda, else 0; 0.5 shares one)"
    )
    group.add_argument(
        "--out-format", choices=("jsonl", "parquet"), default="jsonl", help="Ray's writer (default jsonl)"
    )


def plain_text(docstring: str) -> str:
    """A module docstring as ``--help`` shows it: reStructuredText's double backticks around code removed (a Markdown
    fence of three backticks stays)."""
    return re.sub(r"(?<!`)``([^`]+)``(?!`)", r"\1", docstring)
