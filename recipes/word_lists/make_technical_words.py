"""Build ``seq2spec/assets/technical_words.txt`` and ``technical_words_in_context.txt``: lower-case words of software
that no English dictionary knows.

The shipped speller makes such words into dictionary words a letter or two away ("We use async in production." ->
"sync", "backend" -> "backed", "redis" -> "reds", "numpy" -> "bumpy", "codec" -> "code", "edit the toml file" ->
"tool file", "chown the folder" -> "shown", "export it to csv" -> "csc"); ``correct`` keeps the words of the first
list as written, and those of the second where another word of the text is technical
(``seq2spec.spelling.protection``).

The words come from the one-line descriptions of Debian's package index (``/var/lib/apt/lists/*_Packages.lz4``, on any
Debian or Ubuntu machine after ``apt-get update``; about 63,000 packages in bookworm's main): a whitespace-separated
token of three or more lower-case ASCII letters (punctuation around it stripped), in neither English word list of the
text steps (symspellpy's dictionary, pyspellchecker's, British and American spellings), written in at least
``--min-descriptions`` descriptions, and no misspelling that codespell records ("ouput": descriptions have typos
too) nor one of ``DESCRIPTION_TYPOS``, read off the list. A three-letter word one edit from one of the 1,000 most
frequent English words is left out: a typo of "try", "ask" or "him" ("tty", "awk", "uim") must stay a typo.

Users write the names of commands, file formats and acronyms in lower case ("run sed on it", "a toml file", "export it
to csv"), and descriptions seldom do. Three more sources, each word of three or more letters, in no dictionary, no
recorded misspelling and not in the list above:

- the names of the commands Debian installs (files in a ``bin``, ``sbin`` or ``games`` folder of the ``Contents-*.gz``
  indexes of ``https://deb.debian.org/debian/dists/bookworm/main/``) that English text writes at all (wordfreq's Zipf
  frequency at least ``--min-command-zipf``, 1.5: "scp", "chown", "sed"; not "ftdump"), or whose name has at least
  ``--long-command-letters`` (7: "lockfile", "journalctl");
- the names of the C library's functions and the system calls that ``manpages-dev`` documents (its section 2 and 3
  pages in the same indexes; wordfreq counts most of them too rarely for the rule above): "strlen", "memcpy",
  "strcpy" (the speller wrote "stolen", "stripy");
- the file extensions of ``/etc/mime.types`` ("csv", "svg", "webp");
- words that descriptions write in capitals (``--min-descriptions`` of them: "TOML", "CSV", "README");
- ``recipes/data/programming_words.txt``, words of programming written for seq2spec ("dereference", "memoize",
  "upsert", "dicts", "eslint"; the speller wrote "deference", "memorize", "upset", "dicks", "silent"), under the
  rule of seq2spec's other written lists instead of the frequency gap below: one edit from a word symspellpy counts
  20 million times or more ("const": "cost"), it is kept only beside another technical word.

A word of these that a writer may mean as another word goes to the second list, kept only beside another technical
word: one whose commonest neighbour one edit away is more than ``--max-neighbour-gap`` Zipf more frequent ("sed" of
"set", "env" of "end", "chown" of "shown"), or of three letters one edit from a common word (the rule above).
Usage::

    pip install wordfreq
    curl -O https://deb.debian.org/debian/dists/bookworm/main/Contents-amd64.gz
    curl -O https://deb.debian.org/debian/dists/bookworm/main/Contents-all.gz
    python recipes/word_lists/make_technical_words.py --contents Contents-amd64.gz Contents-all.gz \\
        [--lists /var/lib/apt/lists]
"""

from __future__ import annotations

import argparse
import collections
import gzip
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the recipes
from speller_data import load_typos  # noqa: E402
from symspellpy.editdistance import DistanceAlgorithm, EditDistance

from seq2spec.spelling.dictionary_words import dictionary_checker
from seq2spec.spelling.protection.word_lists import TECHNICAL_WORDS_IN_CONTEXT_PATH, TECHNICAL_WORDS_PATH

# misspellings in the descriptions that codespell does not record, found by reading the list
DESCRIPTION_TYPOS = frozenset({"cammon", "geografic", "llibrary", "manipulaing", "recurseively"})
FREQUENT_COUNT = 20_000_000  # a written word one edit from a word symspellpy counts this often is kept in context
COMMON_WORDS = 1000  # the most frequent words of symspellpy's dictionary a three-letter word must not be one edit from
_WORD = re.compile(r"^[\"'(\[]*([a-z]{3,})[\"')\],.;:!?]*$")
_CAPITALS = re.compile(r"^[\"'(\[]*([A-Z]{3,})[\"')\],.;:!?]*$")
# a command's path in a Contents index: "usr/bin/jq   utils/jq", "usr/lib/postgresql/15/bin/postgres   database/..."
_COMMAND = re.compile(r"^(?:\S*/)?(?:s?bin|games)/([a-z]{3,})\s")
# a C library function's or system call's page in a Contents index: "usr/share/man/man3/strlen.3.gz   doc/manpages-dev"
_MAN_PAGE = re.compile(r"^usr/share/man/man[23]/([a-z]{3,})\.[23]\.gz\s+(\S+)$")
MAN_PAGES_PACKAGE = "doc/manpages-dev"
PROGRAMMING_WORDS = Path(__file__).resolve().parents[1] / "data" / "programming_words.txt"


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


def written_in(descriptions: list[str], pattern: re.Pattern[str], min_descriptions: int) -> set[str]:
    """The words ``pattern`` takes from a token (in lower case) written in at least ``min_descriptions``
    descriptions."""
    counts: collections.Counter[str] = collections.Counter()
    for description in descriptions:
        counts.update({match.group(1).lower() for token in description.split() if (match := pattern.match(token))})
    return {word for word, count in counts.items() if count >= min_descriptions}


def technical_words(descriptions: list[str], min_descriptions: int) -> list[str]:
    """The words of the module docstring's first rule, sorted."""
    is_word = dictionary_checker()
    misspellings = _misspellings()
    near_common = _near_common_word()
    return sorted(
        word
        for word in written_in(descriptions, _WORD, min_descriptions)
        if not is_word(word) and word not in misspellings and not near_common(word)
    )


def command_names(contents: list[Path]) -> set[str]:
    """The names of three or more lower-case letters of the commands in Debian's ``Contents-*.gz`` indexes."""
    names = set()
    for path in contents:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as lines:
            names.update(match.group(1) for line in lines if (match := _COMMAND.match(line)))
    return names


def man_page_names(contents: list[Path], package: str = MAN_PAGES_PACKAGE) -> set[str]:
    """The names of three or more lower-case letters of the section 2 and 3 pages ``package`` installs, in Debian's
    ``Contents-*.gz`` indexes."""
    names = set()
    for path in contents:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                match = _MAN_PAGE.match(line.rstrip("\n"))
                if match and package in match.group(2).split(","):
                    names.add(match.group(1))
    return names


def written_words(path: Path) -> set[str]:
    """The words of a word list written for seq2spec (whitespace-separated, ``#`` starts a comment line)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return {word for line in lines if not line.startswith("#") for word in line.split()}


def file_extensions(mime_types: Path) -> set[str]:
    """The file extensions of three or more lower-case letters in a ``mime.types`` file."""
    extensions = set()
    for line in mime_types.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            extensions.update(word for word in line.split()[1:] if re.fullmatch("[a-z]{3,}", word))
    return extensions


def words_by_context(
    commands: set[str],
    others: set[str],
    listed: set[str],
    min_command_zipf: float,
    long_command_letters: int,
    max_neighbour_gap: float,
    programming: set[str] = frozenset(),
) -> tuple[list[str], list[str]]:
    """The words of the module docstring's second rule among ``commands``, ``others`` (extensions, words in
    capitals, C functions) and ``programming`` (the written words) that ``listed`` leaves out: those kept anywhere
    and those kept beside another technical word, each sorted. A written word no other source gives goes in context
    only when it is one edit from a word symspellpy counts ``FREQUENT_COUNT`` times or more, the rule of seq2spec's
    other written lists ("memoize" is kept anywhere, "const" beside code: "cost"); the others by the frequency gap."""
    from make_current_words import one_edit_away
    from wordfreq import zipf_frequency

    from seq2spec.spelling.classical import word_counts

    def zipf(word: str) -> float:
        return zipf_frequency(word, "en", wordlist="large")

    is_word = dictionary_checker()
    misspellings = _misspellings()
    near_common = _near_common_word()
    counts = word_counts()
    written = {word for word in commands if len(word) >= long_command_letters or zipf(word) >= min_command_zipf}
    candidates = written | others
    anywhere, in_context = [], []
    for word in sorted((candidates | programming) - listed):
        if is_word(word) or word in misspellings:
            continue
        neighbours = one_edit_away(word)
        if word in candidates:
            slip = max((zipf(other) for other in neighbours), default=0.0) - zipf(word) > max_neighbour_gap
        else:  # a written word alone
            slip = any(counts.get(other, 0) >= FREQUENT_COUNT for other in neighbours)
        (in_context if near_common(word) or slip else anywhere).append(word)
    return anywhere, in_context


def _misspellings() -> set[str]:
    """codespell's misspellings ("ouput"; "alot" for "a lot" too) and ``DESCRIPTION_TYPOS``."""
    from make_current_words import recorded_misspellings

    return {typo for typos in load_typos().values() for typo in typos} | recorded_misspellings() | DESCRIPTION_TYPOS


def _near_common_word():
    """A test of whether a word has three letters and is one edit from one of the ``COMMON_WORDS``."""
    common = _common_words()
    distance = EditDistance(DistanceAlgorithm.DAMERAU_OSA).compare
    return lambda word: len(word) == 3 and any(distance(word, other, 1) == 1 for other in common)


def _common_words() -> list[str]:
    """The ``COMMON_WORDS`` most frequent words of symspellpy's English dictionary."""
    dictionary = files("symspellpy") / "frequency_dictionary_en_82_765.txt"
    lines = dictionary.read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines[:COMMON_WORDS]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists", type=Path, default=Path("/var/lib/apt/lists"))
    parser.add_argument("--min-descriptions", type=int, default=3)
    parser.add_argument("--contents", type=Path, nargs="+", required=True, help="Debian's Contents-*.gz indexes")
    parser.add_argument("--mime-types", type=Path, default=Path("/etc/mime.types"))
    parser.add_argument("--programming-words", type=Path, default=PROGRAMMING_WORDS)
    parser.add_argument("--min-command-zipf", type=float, default=1.5)
    parser.add_argument("--long-command-letters", type=int, default=7)
    parser.add_argument("--max-neighbour-gap", type=float, default=2.0)
    parser.add_argument("--out", type=Path, default=TECHNICAL_WORDS_PATH)
    parser.add_argument("--out-in-context", type=Path, default=TECHNICAL_WORDS_IN_CONTEXT_PATH)
    args = parser.parse_args(argv)
    for path in [*args.contents, args.mime_types, args.programming_words]:
        if not path.is_file():
            raise SystemExit(f"{path} not found (see the usage in {__file__})")
    descriptions = package_descriptions(args.lists)
    described = technical_words(descriptions, args.min_descriptions)
    capitals = written_in(descriptions, _CAPITALS, args.min_descriptions)
    anywhere, in_context = words_by_context(
        command_names(args.contents),
        file_extensions(args.mime_types) | capitals | man_page_names(args.contents),
        set(described),
        args.min_command_zipf,
        args.long_command_letters,
        args.max_neighbour_gap,
        written_words(args.programming_words),
    )
    words = sorted([*described, *anywhere])
    header = (
        f"# lower-case words of software no English dictionary knows: {len(described)} words of {len(descriptions)} "
        f"Debian package descriptions and {len(anywhere)} names of commands, C functions and system calls, file "
        "extensions, words descriptions write in capitals and words of programming "
        "(recipes/word_lists/make_technical_words.py)\n"
    )
    args.out.write_text(header + "\n".join(words) + "\n", encoding="utf-8")
    header = (
        f"# {len(in_context)} names of commands, C functions and system calls, file extensions, words descriptions "
        "write in capitals and words of programming that a writer may mean as another word, kept beside another "
        "technical word (recipes/word_lists/make_technical_words.py)\n"
    )
    args.out_in_context.write_text(header + "\n".join(in_context) + "\n", encoding="utf-8")
    print(f"{len(words)} words -> {args.out}, {len(in_context)} -> {args.out_in_context}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
