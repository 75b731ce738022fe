"""Broader training text for the speller: technical and everyday English prose that a Debian system ships, and a
noise mixer that adds human-like misspellings (``noise.HumanNoise``) to the recipe's own corruption.

Text (``build_text``; ``train_speller.py --stage text`` snapshots it into the work directory as ``text.json.gz``):

- Debian package descriptions: the long descriptions of Debian bookworm ``main``
  (``/var/lib/apt/lists/*_i18n_Translation-en.lz4``, fetched by ``apt-get update -o Acquire::Languages=en``).
  Each description is its package's own text, under that package's licence (DFSG-free, Debian ``main``).
- Manual pages installed under ``/usr/share/man/man[1-8]`` (English only), read as roff source: the running text
  of paragraphs (font macros such as ``.B``/``.I`` inlined, every other request ends a paragraph; ``.nf``/``.EX``
  blocks skipped). Each page is its package's text, under that package's licence (``/usr/share/doc/PKG/copyright``).

Kept out: the packages of ``make_ood_spelling_set.EXCLUDED_SOURCES`` (the out-of-domain evaluation's sources),
every package of Python itself (``python3*``, ``libpython*``, ``idle*``: Python's own documentation is reserved for
external checks), and every sentence of ``data/spelling_heldout.tsv`` and ``data/spelling_heldout_ood.tsv``
(compared in lower case). Sentences pass ``make_ood_spelling_set.sentence_ok`` (5-30 words, at most 200
characters, a capital first, . ! or ? last; no code, paths, options, URLs, quotes) and hold no word codespell lists
as a misspelling. Deduplicated, in a fixed order, at most 2,000 sentences of one package (``PER_PACKAGE``);
``speller_data.is_held_out`` splits them like the corpus.
"""

from __future__ import annotations

import gzip
import hashlib
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))  # the evaluation sets' makers
import make_ood_spelling_set as ood  # noqa: E402
import speller_data  # noqa: E402
from classical_spellers import case_pattern
from noise import HumanNoise, split_token

from seq2spec.spelling.capitals import fold_capitals
from seq2spec.spelling.classical import shared_symspell_corrector

APT_LISTS = Path("/var/lib/apt/lists")
MAN_DIR = Path("/usr/share/man")
DPKG_INFO = Path("/var/lib/dpkg/info")
DATA_DIR = Path(__file__).resolve().parent / "data"
EVALUATION_SETS = (DATA_DIR / "spelling_heldout.tsv", DATA_DIR / "spelling_heldout_ood.tsv")
INSTALL_HINT = "apt-get update -o Acquire::Languages=en  (the package descriptions, Translation-en)"
_PYTHON_PACKAGE = re.compile(r"^(python3|python2|python\d|libpython|idle)")


def excluded_package(package: str) -> bool:
    """Packages whose text never goes into training: the evaluation's sources and Python itself."""
    excluded = {name for name, _, _ in ood.EXCLUDED_SOURCES}
    return package.split(":")[0] in excluded or bool(_PYTHON_PACKAGE.match(package))


def prose_sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph that pass the out-of-domain set's filters."""
    return ood.paragraph_sentences(paragraph)


# ----------------------------------------------------------------------------- package descriptions


def _description_paragraphs(text: str):
    """(package, paragraph) for every paragraph of every long description in a Translation-en file."""
    package = None
    lines: list[str] = []
    inside = False

    def flush():
        if package and lines:
            yield package, " ".join(lines)
        lines.clear()

    for line in text.splitlines():
        if line.startswith("Package:"):
            yield from flush()
            package, inside = line.split(":", 1)[1].strip(), False
        elif line.startswith("Description-en:"):
            yield from flush()
            inside = True  # the short description (no sentence) is skipped
        elif inside and line.startswith(" "):
            body = line[1:]
            if body.strip() == "." or body.startswith((" ", "*", "-", "+", "o ")):
                yield from flush()  # a blank line, or verbatim / list text: ends the paragraph
                if body.strip() != ".":
                    lines.append(body.strip(" *-+"))
                    yield from flush()  # a list item is its own paragraph
            else:
                lines.append(body.strip())
        else:
            yield from flush()
            inside = False
    yield from flush()


def description_sentences(lists_dir: Path = APT_LISTS) -> dict[str, str]:
    """Sentences of the bookworm ``main`` long descriptions, counted by the package they come from."""
    files = sorted(lists_dir.glob("*_dists_bookworm_main_i18n_Translation-en.lz4"))
    if not files:
        raise FileNotFoundError(f"no Translation-en in {lists_dir}; fetch it with: {INSTALL_HINT}")
    found: dict[str, str] = {}
    for path in files:
        unpacked = subprocess.run(["lz4", "-dc", str(path)], check=True, capture_output=True).stdout
        text = unpacked.decode("utf-8", "ignore")
        for package, paragraph in _description_paragraphs(text):
            if excluded_package(package):
                continue
            for sentence in prose_sentences(paragraph):
                found.setdefault(sentence, package)
    return found


# ----------------------------------------------------------------------------- manual pages


_FONT_MACROS = {"B", "I", "SM", "SB"}
_ALTERNATING = {"BR", "RB", "IR", "RI", "BI", "IB"}
_NO_FILL_START = {"nf", "EX", "Vb", "DS", "Bd", "cs"}
_NO_FILL_END = {"fi", "EE", "Ve", "DE", "Ed"}
_ESCAPES = (
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),
    (re.compile(r"\\s[+-]?\d"), ""),
    (re.compile(r"\\\((aq|cq|oq|rq)"), "'"),
    (re.compile(r"\\\((dq|lq|rq)"), '"'),
    (re.compile(r"\\\((em|en|hy|mi)"), "-"),
    (re.compile(r"\\\[(aq|cq|oq)\]"), "'"),
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\[&|^,/%]"), ""),
    (re.compile(r"\\c$"), ""),
    (re.compile(r"\\ "), " "),
)


def _macro_arguments(rest: str) -> list[str]:
    return [a[1:-1] if a.startswith('"') else a for a in re.findall(r'"[^"]*"|\S+', rest)]


def _unescape(text: str) -> str:
    for pattern, replacement in _ESCAPES:
        text = pattern.sub(replacement, text)
    return text  # any escape left (a backslash) makes the filters drop the sentence


def roff_paragraphs(source: str) -> list[str]:
    """The running text of a man page's paragraphs (roff source): font macros inlined, other requests end a
    paragraph, no-fill blocks and comments skipped."""
    paragraphs: list[str] = []
    current: list[str] = []
    no_fill = False

    def flush():
        if current:
            paragraphs.append(_unescape(" ".join(current)))
            current.clear()

    for line in source.splitlines():
        if line.startswith((".", "'")):
            parts = line[1:].strip().split(None, 1)
            name, rest = (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")
            if name.startswith('\\"'):
                continue  # a comment
            if name in _NO_FILL_START:
                flush()
                no_fill = True
            elif name in _NO_FILL_END:
                no_fill = False
            elif no_fill:
                continue
            elif name in _FONT_MACROS and rest:
                current.append(" ".join(_macro_arguments(rest)))
            elif name in _ALTERNATING and rest:
                current.append("".join(_macro_arguments(rest)))
            else:
                flush()
        elif no_fill:
            continue
        elif not line.strip() or line.startswith((" ", "\t")):
            flush()  # a blank or indented line: a break, or preformatted text
        else:
            current.append(line.strip())
    flush()
    return paragraphs


def installed_files() -> dict[str, str]:
    """Installed file path -> its Debian package, from dpkg's file lists."""
    owner: dict[str, str] = {}
    for listing in sorted(DPKG_INFO.glob("*.list")):
        package = listing.stem.split(":")[0]
        for line in listing.read_text(encoding="utf-8", errors="ignore").splitlines():
            owner.setdefault(line, package)
    return owner


def man_page_sentences(man_dir: Path = MAN_DIR) -> dict[str, str]:
    """Sentences of the English manual pages installed, each with the package it comes from."""
    owner = installed_files()
    found: dict[str, str] = {}
    for path in sorted(man_dir.glob("man[1-8]/*")):
        if path.is_symlink() or not path.is_file():
            continue
        package = owner.get(str(path), "?")
        if package == "?" or excluded_package(package):
            continue  # a page no package owns is not read: its licence is unknown
        try:
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        except (OSError, EOFError):
            continue
        source = raw.decode("utf-8", errors="ignore")
        if source.lstrip().startswith(".so "):
            continue  # a redirect to another page
        for paragraph in roff_paragraphs(source):
            for sentence in prose_sentences(paragraph):
                found.setdefault(sentence, package)
    return found


# ----------------------------------------------------------------------------- the snapshot


def evaluation_sentences(paths=EVALUATION_SETS) -> set[str]:
    """Every source and reference of the evaluation sets, in lower case."""
    sentences = set()
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            sentences.update(field.strip().lower() for field in line.split("\t"))
    return sentences


PER_PACKAGE = 2000  # sentences kept from one package and source at most (google-cloud-cli alone has 25k)


def build_text(typos: dict[str, list[str]], per_package: int = PER_PACKAGE) -> dict:
    """The broader training text: ``{"sentences": {source: [sentence, ...]}, "packages": {source: {package:
    count}}}``, sources ``descriptions`` and ``man_pages``; filtered as the module's docstring says, at most
    ``per_package`` sentences of one package (those whose SHA-1 sorts first)."""
    misspellings = {typo for typo_list in typos.values() for typo in typo_list}
    forbidden = evaluation_sentences()
    result: dict = {"sentences": {}, "packages": {}}
    for name, reader in (("descriptions", description_sentences), ("man_pages", man_page_sentences)):
        found = reader()
        kept = {
            s: p
            for s, p in found.items()
            if s.lower() not in forbidden and not misspellings & set(re.findall(r"[a-z]+", s.lower()))
        }
        by_package: dict[str, list[str]] = {}
        for sentence, package in kept.items():
            by_package.setdefault(package, []).append(sentence)
        kept = {
            s: package
            for package, sentences in by_package.items()
            for s in sorted(sentences, key=lambda s: hashlib.sha1(s.encode("utf-8")).digest())[:per_package]
        }
        result["sentences"][name] = sorted(kept)
        result["packages"][name] = dict(Counter(kept.values()).most_common())
    return result


# ----------------------------------------------------------------------------- noise


@dataclass
class MixedNoise:
    """Corrupts a sentence as people do, or as the recipe always has, or leaves it clean.

    ``clean_share`` of the sentences stay clean; of the others, ``human_share`` get 1-3 typos (1: 50%, 2: 35%,
    3: 15%) from ``noise.HumanNoise`` (codespell, keyboard, dropped/doubled/inserted/transposed letters, phonetic
    swaps, real-word confusions, split and merged words, in capitalised words as in lower-case ones), of which
    ``initial_share`` start with a typo in the sentence's first word (capitalised words picked for the other typos
    ``capitalised_weight`` times as often as lower-case ones); the rest get ``speller_data.Corruptor``'s
    noise. A sentence the human noise cannot touch falls back to the recipe's noise."""

    typos: dict[str, list[str]]
    clean_share: float = 0.3
    human_share: float = 0.5
    initial_share: float = 0.2
    capitalised_weight: float = 1.0  # HumanNoise: a capitalised word's weight when picking the word for a typo

    def __post_init__(self) -> None:
        self.human = HumanNoise(self.typos, capitalised_weight=self.capitalised_weight)
        self.recipe = speller_data.Corruptor(self.typos, clean_share=0.0)

    def __call__(self, sentence: str, rng: random.Random) -> str:
        if rng.random() < self.clean_share:
            return sentence
        if rng.random() >= self.human_share:
            return self.recipe(sentence, rng)
        errors = rng.choices((1, 2, 3), (0.5, 0.35, 0.15))[0]
        words = sentence.split(" ")
        if len(words) > 1 and rng.random() < self.initial_share:
            first = self._first_word(words, rng)
            if first is not None:
                rest, _ = self.human(" ".join(words[1:]), rng, errors - 1) if errors > 1 else (" ".join(words[1:]), [])
                return first + " " + rest
        noisy, kinds = self.human(sentence, rng, errors)
        return noisy if kinds else self.recipe(sentence, rng)

    def _first_word(self, words: list[str], rng: random.Random) -> str | None:
        """The first word with one typo of a kind that fits it (not a merge, which takes the next word)."""
        names = [k for k in self.human.kind_weights if k != "merge" and self.human.eligible(k, words, 0, set())]
        if not names:
            return None
        weights = [self.human.kind_weights[k] for k in names]
        for _ in range(5):
            corrupted = self.human.corrupt(rng.choices(names, weights)[0], words[:1], 0, rng)
            if corrupted is not None:
                return " ".join(corrupted)
        return None


def fold_pair(noisy: str, clean: str, correct_word: Callable[[str], str | None] | None = None) -> tuple[str, str]:
    """A training pair as ``correct`` presents it to a speller with ``fold_capitals``: the source's capitalised
    near-dictionary words in lower case (``seq2spec.spelling.capitals.fold_capitals``), and the same words of the
    target in lower case too, since ``correct`` gives the model's word its capital back. Pairs whose words do not line
    up one for one (a split or merged word), or whose target word at a folded place is not plain title or lower case,
    stay as written."""
    folded = fold_capitals([noisy], correct_word)[0]
    if not folded.folded:
        return noisy, clean
    words = clean.split(" ")
    if len(words) != len(noisy.split(" ")) or len(words) != len(clean.split()):  # split/merged words, odd spacing
        return noisy, clean
    targets = []
    for index, word in enumerate(words):
        if index in folded.folded:
            parts = split_token(word)
            if parts is None or case_pattern(parts[1]) not in ("title", "lower"):
                return noisy, clean
            word = word.lower()
        targets.append(word)
    return folded.text, " ".join(targets)


@dataclass
class FoldedNoise:
    """``noise``'s pairs passed through ``fold_pair``: the training text as ``correct`` folds it. ``pair`` gives
    (source, target); a plain noise gives (its corruption, the sentence)."""

    noise: Callable[[str, random.Random], str]
    correct_word: Callable[[str], str | None] | None = None

    def __post_init__(self) -> None:
        if self.correct_word is None:
            self.correct_word = shared_symspell_corrector()

    def pair(self, sentence: str, rng: random.Random) -> tuple[str, str]:
        return fold_pair(self.noise(sentence, rng), sentence, self.correct_word)


def training_pair(noise, sentence: str, rng: random.Random) -> tuple[str, str]:
    """(source, target) for one training sentence: ``noise.pair`` where the noise rewrites the target too
    (``FoldedNoise``), else (``noise(sentence)``, the sentence)."""
    pair = getattr(noise, "pair", None)
    return pair(sentence, rng) if pair is not None else (noise(sentence, rng), sentence)
