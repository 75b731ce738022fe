"""Build ``seq2spec/assets/technical_words.txt``: lower-case words of software that no English dictionary knows.

The shipped speller makes such words into dictionary words a letter or two away ("We use async in production." ->
"sync", "backend" -> "backed", "redis" -> "reds", "numpy" -> "bumpy", "codec" -> "code"); ``correct`` keeps the
words of this list as written (``seq2spec.spelling.protection``).

The words come from the one-line descriptions of Debian's package index (``/var/lib/apt/lists/*_Packages.lz4``, on any
Debian or Ubuntu machine after ``apt-get update``; about 63,000 packages in bookworm's main): a whitespace-separated
token of three or more lower-case ASCII letters (punctuation around it stripped), in neither English word list of the
text steps (symspellpy's dictionary, pyspellchecker's, British and American spellings), written in at least
``--min-descriptions`` descriptions, and no misspelling that codespell records ("ouput": descriptions have typos
too) nor one of ``DESCRIPTION_TYPOS``, read off the list. A three-letter word one edit from one of the 1,000 most
frequent English words is left out: a typo of "try", "ask" or "him" ("tty", "awk", "uim") must stay a typo. Usage::

    python recipes/make_technical_words.py [--lists /var/lib/apt/lists] [--min-descriptions 3]
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
from importlib.resources import files
from pathlib import Path

from speller_data import load_typos
from symspellpy.editdistance import DistanceAlgorithm, EditDistance

from seq2spec.spelling.dictionary_words import dictionary_checker
from seq2spec.spelling.protection import TECHNICAL_WORDS_PATH

# misspellings in the descriptions that codespell does not record, found by reading the list
DESCRIPTION_TYPOS = frozenset({"cammon", "geografic", "llibrary", "manipulaing", "recurseively"})
COMMON_WORDS = 1000  # the most frequent words of symspellpy's dictionary a three-letter word must not be one edit from
_WORD = re.compile(r"^[\"'(\[]*([a-z]{3,})[\"')\],.;:!?]*$")


def package_descriptions(lists: Path) -> list[str]:
    """The one-line descriptions of every package of the apt lists under ``lists`` (lz4 or plain ``*_Packages``)."""
    texts = []
    for path in sorted(lists.glob("*_Packages*")):
        if path.suffix == ".lz4":
            text = subprocess.run(["lz4cat", str(path)], capture_output=True, text=True, check=True).stdout
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
        texts += re.findall(r"^Description: (.*)$", text, re.MULTILINE)
    if not texts:
        raise SystemExit(f"no package index under {lists}: run apt-get update first")
    return texts


def technical_words(descriptions: list[str], min_descriptions: int) -> list[str]:
    """The words of the module docstring's rule, sorted."""
    counts: collections.Counter[str] = collections.Counter()
    for description in descriptions:
        words = {match.group(1) for token in description.split() if (match := _WORD.match(token))}
        counts.update(words)
    is_word = dictionary_checker()
    misspellings = {typo for typos in load_typos().values() for typo in typos} | DESCRIPTION_TYPOS
    common = _common_words()
    distance = EditDistance(DistanceAlgorithm.DAMERAU_OSA).compare
    return sorted(
        word
        for word, count in counts.items()
        if count >= min_descriptions
        and not is_word(word)
        and word not in misspellings
        and not (len(word) == 3 and any(distance(word, other, 1) == 1 for other in common))
    )


def _common_words() -> list[str]:
    """The ``COMMON_WORDS`` most frequent words of symspellpy's English dictionary."""
    dictionary = files("symspellpy") / "frequency_dictionary_en_82_765.txt"
    lines = dictionary.read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines[:COMMON_WORDS]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists", type=Path, default=Path("/var/lib/apt/lists"))
    parser.add_argument("--min-descriptions", type=int, default=3)
    parser.add_argument("--out", type=Path, default=TECHNICAL_WORDS_PATH)
    args = parser.parse_args(argv)
    descriptions = package_descriptions(args.lists)
    words = technical_words(descriptions, args.min_descriptions)
    header = (
        f"# lower-case words of software no English dictionary knows: {len(words)} words of {len(descriptions)} "
        "Debian package descriptions (recipes/make_technical_words.py)\n"
    )
    args.out.write_text(header + "\n".join(words) + "\n", encoding="utf-8")
    print(f"{len(words)} words -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
