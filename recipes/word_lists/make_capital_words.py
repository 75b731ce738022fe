"""Build ``seq2spec/assets/capital_words.txt``: words that, written in capitals in a text written in capitals, the text
steps keep as written (``protection.shouted_words``).

In a text written in capitals ("PLEASE DO NOT PARK IN FRNOT OF THE GARAGE.") the shipped speller reads its words in
sentence case, so that it fixes their typos, and writes its words in capitals again. An acronym ("NHS", "FBI", "USA")
read so is a plain word to the model, which may make it one ("his", "use"). The list holds the words wordfreq counts
at Zipf ``MIN_ZIPF`` or more (once in a million words of English; "nhs" 4.0, "vpn" 3.4, "tcp" 3.1) that
symspellpy's dictionary lacks, of ``MIN_LETTERS`` to ``MAX_LETTERS`` letters: acronyms, abbreviations ("mr", "km"),
chat ("lol"), names ("nvidia") and American spellings symspellpy lacks ("favorite"). Typos written often enough to
be counted ("hsi" 2.6, "thre" 2.2) stay under the line and are read as words, and so are those over it that codespell
records as misspellings ("teh", "alot", "abd") and contractions written without their apostrophe ("dont", "thats":
``protection.CONTRACTIONS_WITHOUT_APOSTROPHE``, read with it). A word of no vowels ("HTML", "CDN", "THW") is kept in any
case (``protection``).

    python recipes/word_lists/make_capital_words.py
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from wordfreq import iter_wordlist, zipf_frequency

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_current_words import recorded_misspellings  # noqa: E402

from seq2spec.spelling.classical import word_counts  # noqa: E402
from seq2spec.spelling.protection.shouted import CAPITAL_WORDS_PATH  # noqa: E402
from seq2spec.spelling.protection.word import CONTRACTIONS_WITHOUT_APOSTROPHE

MIN_ZIPF = 3.0
MIN_LETTERS, MAX_LETTERS = 2, 8


def capital_words(min_zipf: float = MIN_ZIPF) -> list[str]:
    """wordfreq's English words at ``min_zipf`` or more, of plain letters, that symspellpy does not count and that are
    no recorded misspelling or contraction without its apostrophe, commonest first."""
    pattern = re.compile(rf"[a-z]{{{MIN_LETTERS},{MAX_LETTERS}}}")
    left_out = set(word_counts()) | recorded_misspellings() | set(CONTRACTIONS_WITHOUT_APOSTROPHE)
    found = []
    for word in iter_wordlist("en", "large"):
        if zipf_frequency(word, "en") < min_zipf:
            break  # the list is in order of frequency
        if pattern.fullmatch(word) and word not in left_out:
            found.append(word)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=CAPITAL_WORDS_PATH)
    parser.add_argument("--min-zipf", type=float, default=MIN_ZIPF)
    args = parser.parse_args(argv)
    words = capital_words(args.min_zipf)
    header = (
        f"# words kept as written in a text written in capitals: {len(words)} words of {MIN_LETTERS}-{MAX_LETTERS} "
        f"letters wordfreq counts at Zipf {args.min_zipf} or more and symspellpy's dictionary lacks, no misspelling "
        "codespell records or contraction without its apostrophe, commonest first "
        "(recipes/word_lists/make_capital_words.py)"
    )
    args.out.write_text("\n".join([header, *words]) + "\n", encoding="utf-8")
    print(f"{len(words)} words -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
