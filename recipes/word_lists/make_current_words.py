"""Build ``seq2spec/assets/current_words.txt``: words of current written English that no dictionary of the text
steps knows.

The shipped speller makes such words into dictionary words a letter or two away ("posted a vlog" -> "posted a fog",
"a chai latte" -> "a chair late", "got pwned by a noob" -> "got pawned by a job"); ``correct`` keeps the words of
this list as written (``seq2spec.spelling.protection.is_current_word``).

The words come from wordfreq's English word frequencies (``pip install wordfreq``; its "large" list, compiled from
Wikipedia, subtitles, news, books, web text, Twitter and Reddit): a word of four or more lower-case ASCII letters with
a Zipf frequency of at least ``--min-zipf`` (2.0: about once in ten million words), in neither English word list of
the text steps (symspellpy's dictionary, pyspellchecker's, British and American spellings) nor the technical words,
and none of these, which a writer means as another word:

- a misspelling that codespell records ("alot", "definately");
- a contraction written without its apostrophe ("dont", "youre", "shes") or a dropped g without it ("goin");
- two common words run together, the first a function word of ``FUNCTION_WORDS`` or the second "the" ("ofthe",
  "inthe", "tobe", "andthe"; names such as "Adamson" and "Addis" stay);
- a letter said long ("sooo": the protection's own rule);
- a word whose commonest neighbour one edit away is more than ``--max-neighbour-gap`` Zipf (2.0: a hundred times)
  more frequent: a slip of that word more often than a word of its own ("shel" of "she", "werk" of "were", "ince" of
  "since"; "vlog" stays beside "blog", "noob" beside "noon").

The words of four or more letters down to ``--names-min-zipf`` (2.0) that the rule above leaves out, mostly names
one edit from a far commoner word ("Matteo", "Shira", "Jing": the speller wrote "Matter", "Shirt", "King"), go to
``seq2spec/assets/name_words.txt``; the text steps keep them only capitalised within a sentence. (At ``--min-zipf``
2.5, words between 2.0 and 2.5 went there too: "chidi", "capex", "nerfed", "ganache", "licensor" and "muji" were kept
only capitalised, and the speller wrote "child", "cape", "nerved", "panache", "licenser", "music" in lower case.)

Usage::

    pip install wordfreq && python recipes/word_lists/make_current_words.py [--min-zipf 2.0] [--max-neighbour-gap 2.0]
"""

from __future__ import annotations

import argparse
import re
import string
from importlib.metadata import version
from pathlib import Path

from seq2spec.spelling.classical import word_counts
from seq2spec.spelling.dictionary_words import dictionary_checker
from seq2spec.spelling.protection.word_lists import CURRENT_WORDS_PATH, NAME_WORDS_PATH, technical_words
from seq2spec.spelling.protection.word_rules import is_lengthened

# words that a missing space joins to a neighbour most often ("ofthe", "inthe", "tothe", "tobe", "itis")
FUNCTION_WORDS = frozenset("and at be for in is it of on the to".split())
COMMON_WORD_COUNT = 5_000_000  # the other word's count in symspellpy's dictionary at least (about the 9,000 commonest)
# the endings of a contraction written without its apostrophe: dont, shes, hed, youre, theyve, itll
_CONTRACTION_ENDINGS = ("nt", "s", "d", "m", "ll", "ve", "re")


def one_edit_away(word: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion of a lower-case letter from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    letters = string.ascii_lowercase
    deletions = {left + right[1:] for left, right in splits if right}
    transpositions = {left + right[1] + right[0] + right[2:] for left, right in splits if len(right) > 1}
    substitutions = {left + letter + right[1:] for left, right in splits if right for letter in letters}
    insertions = {left + letter + right for left, right in splits for letter in letters}
    return (deletions | transpositions | substitutions | insertions) - {word}


def recorded_misspellings() -> set[str]:
    """Every misspelling of codespell's dictionary, lower case ("alot" for "a lot" too)."""
    import codespell_lib

    path = Path(codespell_lib.__file__).parent / "data" / "dictionary.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    return {line.split("->", 1)[0].strip().lower() for line in lines if "->" in line}


def candidates(min_zipf: float, min_length: int) -> list[tuple[str, float]]:
    """The words of wordfreq's English list of at least ``min_length`` lower-case letters and Zipf ``min_zipf``,
    most frequent first, that none of the text steps' lists knows and that are none of the module docstring's
    misspellings, contractions, dropped g's, words run together or letters said long; each with its Zipf frequency."""
    from wordfreq import top_n_list, zipf_frequency

    is_word = dictionary_checker()
    misspellings = recorded_misspellings()
    technical = technical_words()
    counts = word_counts()
    shape = re.compile(f"[a-z]{{{min_length},}}")

    def apostrophe_left_out(word: str) -> bool:
        if word.endswith("in") and is_word(word + "g"):
            return True
        return any(word.endswith(end) and is_word(word[: -len(end)]) for end in _CONTRACTION_ENDINGS)

    def run_together(word: str) -> bool:
        return any(
            (left in FUNCTION_WORDS or right == "the")
            and min(counts.get(left, 0), counts.get(right, 0)) >= COMMON_WORD_COUNT
            for left, right in ((word[:i], word[i:]) for i in range(1, len(word)))
        )

    found = []
    for word in top_n_list("en", 1_000_000, wordlist="large"):
        frequency = zipf_frequency(word, "en", wordlist="large")
        if frequency < min_zipf:
            break  # the list runs from the most frequent down
        if not shape.fullmatch(word) or is_word(word) or word in technical or word in misspellings:
            continue
        if apostrophe_left_out(word) or run_together(word) or is_lengthened(word):
            continue
        found.append((word, frequency))
    return found


def current_words(found: list[tuple[str, float]], min_zipf: float, max_neighbour_gap: float) -> list[str]:
    """The words of the module docstring's rule among the ``candidates`` ``found``, sorted."""
    from wordfreq import zipf_frequency

    words = []
    for word, frequency in found:
        if frequency < min_zipf:
            continue
        nearest = max((zipf_frequency(other, "en", wordlist="large") for other in one_edit_away(word)), default=0.0)
        if nearest - frequency <= max_neighbour_gap:
            words.append(word)
    return sorted(words)


def name_words(found: list[tuple[str, float]], min_zipf: float, current: list[str]) -> list[str]:
    """The ``candidates`` ``found`` down to ``min_zipf`` that ``current`` leaves out, sorted: mostly names ("maren",
    "matteo", "chidi", "shira"), which the text steps keep only capitalised within a sentence, where a slip of a
    commoner word is rare."""
    left_out = set(current)
    return sorted(word for word, frequency in found if frequency >= min_zipf and word not in left_out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-zipf", type=float, default=2.0)
    parser.add_argument("--max-neighbour-gap", type=float, default=2.0)
    parser.add_argument("--names-min-zipf", type=float, default=2.0)
    parser.add_argument("--out", type=Path, default=CURRENT_WORDS_PATH)
    parser.add_argument("--names-out", type=Path, default=NAME_WORDS_PATH)
    args = parser.parse_args(argv)
    source = f"wordfreq {version('wordfreq')}'s English frequencies (data CC BY-SA 4.0, Robyn Speer)"
    found = candidates(min(args.min_zipf, args.names_min_zipf), min_length=4)  # wordfreq's list read once
    words = current_words(found, args.min_zipf, args.max_neighbour_gap)
    header = (
        f"# words of current English no dictionary of the text steps knows: {len(words)} words of {source}, Zipf >= "
        f"{args.min_zipf} (recipes/word_lists/make_current_words.py)\n"
    )
    args.out.write_text(header + "\n".join(words) + "\n", encoding="utf-8")
    names = name_words(found, args.names_min_zipf, words)
    header = (
        f"# words kept when capitalised within a sentence (mostly names): {len(names)} words of {source}, Zipf >= "
        f"{args.names_min_zipf}, not in current_words.txt (recipes/word_lists/make_current_words.py)\n"
    )
    args.names_out.write_text(header + "\n".join(names) + "\n", encoding="utf-8")
    print(f"{len(words)} words -> {args.out}, {len(names)} names -> {args.names_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
