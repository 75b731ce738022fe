"""Spelling sets of text as people write it: technical prose and Unicode-rich prose, with typos in ordinary words.

The clean lines (``data/real_text/``, written for seq2spec's evaluation) hold what real text holds and a corrector
must keep: numbers, versions, URLs, e-mail addresses, @handles, #tags, paths, flags, identifiers, code, acronyms
(``technical.txt``); curly quotes and apostrophes, dashes, ellipses, accented words and names, currency, symbols and
emoji (``unicode.txt``). Typos come from ``noise.HumanNoise`` (codespell's misspellings, keyboard slips, dropped,
doubled and transposed letters, real-word confusions, split and merged words), which touches plain words only (no
technical token, ``seq2spec.spelling.protection.is_technical``, is corrupted or merged), and,
in lines written with apostrophes, an apostrophe left out of a contraction (``didn’t`` -> ``didnt``), as people
type it. A share of the lines stays clean. ``validation.txt``, written apart from both, is for choosing settings.

    python recipes/data/make_real_text_sets.py   # -> data/spelling_technical.jsonl, spelling_unicode.jsonl,
                                            #    spelling_real_validation.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the recipes
from noise import HumanNoise  # noqa: E402
from speller_data import load_typos  # noqa: E402

from seq2spec.spelling.protection.word_rules import is_technical

DATA = Path(__file__).resolve().parent
SETS = {  # clean lines -> the set made of them
    "technical.txt": "spelling_technical.jsonl",
    "unicode.txt": "spelling_unicode.jsonl",
    "validation.txt": "spelling_real_validation.jsonl",
}
# a contraction's apostrophe, straight or curly, between letters
_CONTRACTION = re.compile(r"(?<=[A-Za-z])['\u2019](?=(t|s|re|ve|ll|d|m)\b)")


def drop_apostrophe(line: str, rng: random.Random) -> str | None:
    """The line with one contraction's apostrophe left out, or None when it has none."""
    spots = [match.start() for match in _CONTRACTION.finditer(line)]
    if not spots:
        return None
    spot = rng.choice(spots)
    return line[:spot] + line[spot + 1 :]


def corrupt(line: str, noise: HumanNoise, rng: random.Random) -> tuple[str, list[str]]:
    """The line with 1-3 typos (an apostrophe left out for one in four lines that have a contraction)."""
    errors = rng.choices((1, 2, 3), (0.5, 0.35, 0.15))[0]
    kinds = []
    if rng.random() < 0.25:
        dropped = drop_apostrophe(line, rng)
        if dropped is not None:
            line, errors, kinds = dropped, errors - 1, ["apostrophe"]
    if errors:
        line, applied = noise(line, rng, errors)
        kinds += applied
    return line, kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clean-share", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    noise = HumanNoise(load_typos(), untouchable=is_technical)  # typos in plain words only
    for source_name, set_name in SETS.items():
        lines = (DATA / "real_text" / source_name).read_text(encoding="utf-8").splitlines()
        rng = random.Random(f"{args.seed}-{source_name}")
        clean = set(rng.sample(range(len(lines)), round(args.clean_share * len(lines))))
        rows, kinds = [], Counter()
        for index, line in enumerate(lines):
            if index in clean:
                rows.append({"source": line, "reference": line})
                continue
            noisy, applied = corrupt(line, noise, rng)
            kinds.update(applied)
            rows.append({"source": noisy, "reference": line})
        path = args.out / set_name
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        typos = ", ".join(f"{kind} {count}" for kind, count in kinds.most_common())
        print(f"{path}: {len(rows)} lines, {len(clean)} clean; {sum(kinds.values())} typos: {typos}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
