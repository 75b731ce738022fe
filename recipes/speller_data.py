"""Offline data for the spelling-correction pair: clean English sentences and realistic corruptions.

Clean text: WordNet's usage examples (Debian package ``wordnet-base``) and the ``fortunes`` databases (Debian
packages ``fortunes`` and ``fortunes-min``); WordNet's definitions as extra training text. Misspellings:
codespell's dictionary of real typos (PyPI ``codespell``, CC BY-SA 3.0 data) reversed (correct word -> typos),
plus keyboard-neighbour and edit noise.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

WORDNET_DIR = Path("/usr/share/wordnet")
FORTUNES_DIR = Path("/usr/share/games/fortunes")
INSTALL_HINT = (
    "apt-get install wordnet-base fortunes fortunes-min && pip install codespell  (the corpus and typo sources)"
)

_KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _keyboard_neighbours() -> dict[str, str]:
    positions = {ch: (r, c) for r, row in enumerate(_KEYBOARD_ROWS) for c, ch in enumerate(row)}
    neighbours: dict[str, str] = {}
    for ch, (r, c) in positions.items():
        near = [
            other
            for other, (r2, c2) in positions.items()
            if other != ch and abs(r - r2) <= 1 and abs((c + 0.5 * r) - (c2 + 0.5 * r2)) <= 1.0
        ]
        neighbours[ch] = "".join(sorted(near))
    return neighbours


KEYBOARD_NEIGHBOURS = _keyboard_neighbours()
_PRINTABLE = re.compile(r"^[ -~]+$")


def _clean_sentence(text: str) -> str | None:
    text = re.sub(r"\s+", " ", text).strip()
    if not 20 <= len(text) <= 140 or not _PRINTABLE.match(text):
        return None
    if re.search(r"[<>|{}\\_=#@*~^\[\]]|--|\.\.\.", text):
        return None
    if sum(ch.isalpha() for ch in text) < 0.7 * len(text) or text.upper() == text:
        return None
    return text


def _wordnet_synsets(directory: Path):
    """Each synset of WordNet's data files as (its words, its gloss field: definitions, then quoted examples)."""
    for part in ("noun", "verb", "adj", "adv"):
        path = directory / f"data.{part}"
        for line in path.read_text(encoding="utf-8", errors="ignore").splitlines():
            if line.startswith("  ") or "|" not in line:
                continue
            head, gloss = line.split("|", 1)
            fields = head.split()  # offset, lexicographer file, type, word count (hex), then word / lex-id pairs
            words = fields[4 : 4 + 2 * int(fields[3], 16) : 2]
            # adjectives may carry a position marker: "redux(ip)"; multi-word lemmas use underscores
            yield [re.sub(r"\([a-z]+\)$", "", word).replace("_", " ") for word in words], gloss


def wordnet_examples(directory: Path = WORDNET_DIR) -> list[str]:
    sentences = []
    for _, gloss in _wordnet_synsets(directory):
        for quoted in re.findall(r'"([^"]+)"', gloss):
            cleaned = _clean_sentence(quoted)
            if cleaned:
                sentences.append(cleaned)
    return sentences


def _definitions(gloss: str) -> list[str]:
    """A gloss field's definitions: the text outside the quoted examples, split at ';'."""
    return [piece.strip() for piece in re.sub(r'"[^"]*"', "", gloss).split(";") if piece.strip()]


def wordnet_glosses(directory: Path = WORDNET_DIR) -> list[str]:
    """WordNet's definitions (the gloss before the quoted examples, split at ';'), deduplicated, in a fixed order.

    Dictionary prose with a far wider vocabulary than the usage examples: rare, technical and proper words that
    the corrector must learn to copy rather than "fix".
    """
    glosses = set()
    for _, gloss in _wordnet_synsets(directory):
        for piece in _definitions(gloss):
            cleaned = _clean_sentence(piece)
            if cleaned:
                glosses.add(cleaned)
    return sorted(glosses)


def wordnet_headword_entries(directory: Path = WORDNET_DIR, max_words: int = 3) -> list[str]:
    """Dictionary entries: a synset's words (at most ``max_words``) and its first definition, as
    "sweptwing: (of an aircraft) having sweptback wings"; deduplicated, in a fixed order.

    Beyond what the definitions give, every headword appears spelled as the dictionary spells it, proper names
    ("Updike") and rare words ("adust") included: the corrector sees them in clean text and learns to keep them.
    """
    entries = set()
    for words, gloss in _wordnet_synsets(directory):
        definitions = _definitions(gloss)
        if not definitions:
            continue
        cleaned = _clean_sentence(f"{', '.join(dict.fromkeys(words[:max_words]))}: {definitions[0]}")
        if cleaned:
            entries.add(cleaned)
    return sorted(entries)


def fortune_sentences(directory: Path = FORTUNES_DIR) -> list[str]:
    sentences = []
    for path in sorted(directory.iterdir()):
        if path.suffix in (".dat", ".u8") or path.is_dir() or path.is_symlink():
            continue
        for entry in path.read_text(encoding="utf-8", errors="ignore").split("\n%\n"):
            flat = re.sub(r"\s+", " ", entry).strip()
            for piece in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", flat):
                cleaned = _clean_sentence(piece)
                if cleaned and cleaned[0].isupper() and cleaned[-1] in ".!?":
                    sentences.append(cleaned)
    return sentences


def load_corpus() -> list[str]:
    """All clean sentences, deduplicated, in a fixed order."""
    missing = [str(p) for p in (WORDNET_DIR / "data.noun", FORTUNES_DIR / "fortunes") if not p.exists()]
    if missing:
        raise FileNotFoundError(f"missing corpus files {missing}; install them with: {INSTALL_HINT}")
    return sorted(set(wordnet_examples()) | set(fortune_sentences()))


def is_held_out(sentence: str, share_percent: int = 5) -> bool:
    """A stable split by content hash: the same sentence is always on the same side."""
    digest = hashlib.sha1(sentence.lower().encode("utf-8")).digest()
    return digest[0] * 100 // 256 < share_percent


def load_typos() -> dict[str, list[str]]:
    """codespell's typo->fix dictionary, reversed: lower-case correct word -> its recorded misspellings."""
    try:
        import codespell_lib
    except ImportError as error:
        raise ImportError(f"codespell is needed for real misspellings; install it with: {INSTALL_HINT}") from error
    path = Path(codespell_lib.__file__).parent / "data" / "dictionary.txt"
    typos: dict[str, list[str]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if "->" not in line:
            continue
        typo, fixes = line.split("->", 1)
        fixes = [fix.strip() for fix in fixes.split(",") if fix.strip()]
        if len(fixes) == 1 and typo.isalpha() and fixes[0].isalpha():
            typos[fixes[0].lower()].append(typo.lower())
    return dict(typos)


@dataclass
class Corruptor:
    """Turns a clean sentence into a misspelled one (or leaves it clean, so the model learns to copy)."""

    typos: dict[str, list[str]]
    clean_share: float = 0.2
    real_typo_share: float = 0.6
    max_errors: int = 3

    def __call__(self, sentence: str, rng: random.Random) -> str:
        if rng.random() < self.clean_share:
            return sentence
        words = sentence.split(" ")
        candidates = [i for i, word in enumerate(words) if sum(ch.isalpha() for ch in word) >= 3]
        if not candidates:
            return sentence
        for index in rng.sample(candidates, min(len(candidates), rng.randint(1, self.max_errors))):
            words[index] = self.corrupt_word(words[index], rng)
        return " ".join(words)

    def corrupt_word(self, word: str, rng: random.Random) -> str:
        match = re.match(r"^([^A-Za-z]*)([A-Za-z']+)([^A-Za-z]*)$", word)
        if not match:
            return self.edit(word, rng)
        before, core, after = match.groups()
        known = self.typos.get(core.lower())
        if known and rng.random() < self.real_typo_share:
            replacement = rng.choice(known)
            if core[0].isupper():
                replacement = replacement[0].upper() + replacement[1:]
            return before + replacement + after
        return before + self.edit(core, rng) + after

    @staticmethod
    def edit(word: str, rng: random.Random) -> str:
        letters = [i for i, ch in enumerate(word) if ch.isalpha()]
        if not letters:
            return word
        i = rng.choice(letters)
        operation = rng.choice(("neighbour", "delete", "insert", "transpose", "double"))
        ch = word[i]
        near = KEYBOARD_NEIGHBOURS.get(ch.lower(), "") or "e"
        if operation == "neighbour":
            new = rng.choice(near)
            return word[:i] + (new.upper() if ch.isupper() else new) + word[i + 1 :]
        if operation == "delete" and len(word) > 3:
            return word[:i] + word[i + 1 :]
        if operation == "insert":
            return word[:i] + rng.choice(near) + word[i:]
        if operation == "transpose" and i + 1 < len(word) and word[i + 1] != ch:
            return word[:i] + word[i + 1] + ch + word[i + 2 :]
        return word[:i] + ch + word[i:]
