"""``seq2spec correct`` as a user runs it: words per second on a file of 10,000 lines beside the classical spell
checkers on the same lines, and a long text given as one string against the same text as separate lines.

The lines are sentences of the Debian handbook, Debian reference and developer's reference as installed (code,
names, paths, curly quotes and all; ``apt-get install debian-handbook debian-reference-en developers-reference``),
most of them with one or two typos in plain words (``recipes/noise.py``, codespell's misspellings and keyboard
slips). Rows, each timed as a whole:

- ``seq2spec correct``: the command in a process of its own (``--threads``), start-up and model loading included;
  ``--no-protect`` and ``--dtype int8`` rows beside it;
- ``symspellpy`` / ``pyspellchecker``: the peers word by word (``recipes/classical_spellers.py``), dictionary
  loading included;
- one string: ``Seq2SeqSpeculator().correct([text])`` of about 100,000 characters against ``correct(lines)`` of the
  same lines, in one process, interleaved, median of ``--repeats``.

    python benchmarks/bench_correct.py                 # 10,000 lines, 2 threads
    python benchmarks/bench_correct.py --lines 500 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECIPES = Path(__file__).resolve().parents[1] / "recipes"
sys.path.insert(0, str(RECIPES))


def debian_doc_lines(count: int, seed: int) -> list[str]:
    """``count`` distinct sentences (20-220 characters, four words or more) of the installed Debian manuals."""
    from make_ood_spelling_set import _CUT, _SENTENCE_END, manual_paragraphs

    sentences = set()
    for paragraph in manual_paragraphs():
        flat = re.sub(r"\s+", " ", paragraph.replace(_CUT, " ")).strip()
        for piece in _SENTENCE_END.split(flat):
            piece = piece.strip()
            if 20 <= len(piece) <= 220 and len(piece.split()) >= 4:
                sentences.add(piece)
    lines = sorted(sentences)
    random.Random(seed).shuffle(lines)
    if len(lines) < count:
        raise SystemExit(f"only {len(lines)} sentences in the installed manuals, {count} asked for")
    return lines[:count]


def with_typos(lines: list[str], seed: int, share: float = 0.6) -> list[str]:
    """``share`` of the lines with one or two typos in plain words."""
    from noise import HumanNoise
    from speller_data import load_typos

    from seq2spec.spelling.protection.word_rules import is_technical

    noise, rng = HumanNoise(load_typos(), untouchable=is_technical), random.Random(seed)
    return [noise(line, rng, rng.choice((1, 2)))[0] if rng.random() < share else line for line in lines]


def time_command(path: Path, threads: int, *extra: str) -> float:
    environment = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    command = [sys.executable, "-m", "seq2spec", "correct", str(path), "--threads", str(threads), *extra]
    started = time.perf_counter()
    done = subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return seconds


def time_peer(name: str, lines: list[str]) -> float:
    from classical_spellers import correct_texts, load_peer

    started = time.perf_counter()
    correct_texts(lines, load_peer(name))
    return time.perf_counter() - started


def one_string_ratio(lines: list[str], characters: int, repeats: int, threads: int) -> dict:
    """``correct([text])`` of the first lines joined (about ``characters``) against ``correct`` of those lines."""
    import torch

    from seq2spec import Seq2SeqSpeculator

    torch.set_num_threads(threads)
    chosen, total = [], 0
    for line in lines:
        if total >= characters:
            break
        chosen.append(line)
        total += len(line) + 1
    text = " ".join(chosen)
    speculator = Seq2SeqSpeculator()
    speculator.correct(chosen[:32])  # warm-up
    whole, apart = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        speculator.correct([text])
        whole.append(time.perf_counter() - started)
        started = time.perf_counter()
        speculator.correct(chosen)
        apart.append(time.perf_counter() - started)
    return {
        "characters": len(text),
        "lines": len(chosen),
        "one_string_seconds": statistics.median(whole),
        "separate_lines_seconds": statistics.median(apart),
        "ratio": statistics.median(whole) / statistics.median(apart),
    }


def markdown(record: dict) -> str:
    rows = [
        f"{record['lines']} lines, {record['words']} words (whitespace-separated), {record['threads']} CPU threads",
        "",
        "| system | seconds | words per second |",
        "|---|---:|---:|",
    ]
    for name, seconds in record["seconds"].items():
        rows.append(f"| {name} | {seconds:.1f} | {record['words'] / seconds:,.0f} |")
    long = record.get("one_string")
    if long:
        rows += [
            "",
            f"One string of {long['characters']:,} characters against the same {long['lines']} lines: "
            f"{long['one_string_seconds']:.1f} s against {long['separate_lines_seconds']:.1f} s "
            f"(ratio {long['ratio']:.2f}; median of {record['repeats']}).",
        ]
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--characters", type=int, default=100_000, help="length of the one-string text")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of the one-string comparison")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--name", default="correct_cpu")
    parser.add_argument(
        "--parts", nargs="+", choices=("throughput", "one-string"), default=["throughput", "one-string"]
    )
    args = parser.parse_args(argv)

    lines = with_typos(debian_doc_lines(args.lines, args.seed), args.seed)
    words = sum(len(line.split()) for line in lines)
    record = {"lines": len(lines), "words": words, "threads": args.threads, "repeats": args.repeats, "seconds": {}}
    args.out.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every row: a later failure keeps what was measured
        (args.out / f"{args.name}.json").write_text(json.dumps(record, indent=2))
        (args.out / f"{args.name}.md").write_text(markdown(record))

    if "throughput" in args.parts:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "lines.txt"
            path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            for name, extra in (
                ("seq2spec correct", ()),
                ("seq2spec correct --no-protect", ("--no-protect",)),
                ("seq2spec correct --dtype int8", ("--dtype", "int8")),
            ):
                record["seconds"][name] = time_command(path, args.threads, *extra)
                print(f"{name}: {record['seconds'][name]:.1f} s", file=sys.stderr)
                save()
        for peer in ("symspellpy", "pyspellchecker"):
            record["seconds"][peer] = time_peer(peer, lines)
            print(f"{peer}: {record['seconds'][peer]:.1f} s", file=sys.stderr)
            save()
    if "one-string" in args.parts:
        record["one_string"] = one_string_ratio(lines, args.characters, args.repeats, args.threads)
        save()
    print(markdown(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
