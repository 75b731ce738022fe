"""Classical word-by-word spell checking: symspellpy with its bundled English frequency dictionary (``lookup``,
maximum edit distance 2, closest suggestion), and the word handling around any such checker.

Text is split at whitespace (kept as it is); a token is corrected only when it is one purely alphabetic word with
optional punctuation around it (``"(Teh,"`` -> ``"(The,"``); tokens with digits, apostrophes, hyphens or other
characters inside are left alone, as are mixed-case words (``AppArmor``) whose case cannot be carried onto another
word. The word is looked up in lower case and the suggestion takes the word's pattern back: lower case, capitalised
(``Recieve`` -> ``Receive``) or all capitals (``RECIEVE`` -> ``RECEIVE``); the punctuation around it is kept. A word
the checker knows, or has no suggestion for, is left as written.

seq2spec uses it to propose candidates (``SpeculationOptions.spellcheck_copy``: input copy copies from the source
after this check, so its proposals run on through the typos the checker fixes); the recipes score it as a peer of
the speller.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

# one plain word with optional punctuation around it: (before, word, after)
WORD_TOKEN = re.compile(r"^([^A-Za-z0-9]*)([A-Za-z]+)([^A-Za-z0-9]*)$")
WHITESPACE = re.compile(r"(\s+)")  # split keeping the whitespace


def case_pattern(word: str) -> str | None:
    """'lower', 'title', 'upper' (two letters or more) or None (mixed case, as in a name like ``AppArmor``)."""
    if word.islower():
        return "lower"
    if word[0].isupper() and (len(word) == 1 or word[1:].islower()):
        return "title"
    if word.isupper():
        return "upper"
    return None


def apply_case(word: str, pattern: str) -> str:
    """``word`` (lower case) in ``pattern``: as it is, capitalised, or in capitals."""
    if pattern == "upper":
        return word.upper()
    if pattern == "title":
        return word[:1].upper() + word[1:]
    return word


def correct_token(token: str, correct_word: Callable[[str], str | None]) -> str:
    """``token`` corrected by ``correct_word`` (lower-case word -> suggestion or None), case and punctuation kept."""
    match = WORD_TOKEN.match(token)
    if not match:
        return token
    before, core, after = match.groups()
    pattern = case_pattern(core)
    if pattern is None:
        return token
    suggestion = correct_word(core.lower())
    if not suggestion or suggestion == core.lower():
        return token
    return before + apply_case(suggestion, pattern) + after


@dataclass
class WordAlignment:
    """A corrector's ``output`` split at whitespace (kept, so ``text()`` gives it back) and its words aligned with
    the words of the ``source`` it was made from, case ignored (difflib opcodes over word indices). Steps around a
    corrector edit ``pieces[words[j]]``, the output's ``j``-th word."""

    sources: list[str]
    pieces: list[str]
    words: list[int]
    opcodes: list[tuple[str, int, int, int, int]]

    @classmethod
    def of(cls, source: str, output: str) -> WordAlignment:
        sources = [token for token in WHITESPACE.split(source) if token and not token.isspace()]
        pieces = WHITESPACE.split(output)
        words = [index for index, piece in enumerate(pieces) if piece and not piece.isspace()]
        matcher = difflib.SequenceMatcher(
            a=[token.lower() for token in sources], b=[pieces[i].lower() for i in words], autojunk=False
        )
        return cls(sources, pieces, words, matcher.get_opcodes())

    def text(self) -> str:
        return "".join(self.pieces)

    def put(self, low: int, high: int, written: str) -> None:
        """The output's words ``low:high`` replaced by ``written``, or where ``low == high`` ``written`` put before
        word ``low`` one space apart (into the whitespace before it, so that a later change of that word keeps it);
        the pieces keep their places, so word indices stay valid."""
        if high > low:
            first, last = self.words[low], self.words[high - 1]
            self.pieces[first : last + 1] = [written] + [""] * (last - first)
        elif low < len(self.words) and self.words[low] > 0:
            self.pieces[self.words[low] - 1] += f"{written} "
        elif low < len(self.words):
            self.pieces[self.words[low]] = f"{written} {self.pieces[self.words[low]]}"
        elif self.words and self.words[-1] + 1 < len(self.pieces):
            self.pieces[self.words[-1] + 1] = f" {written}{self.pieces[self.words[-1] + 1]}"
        elif self.words:
            self.pieces[self.words[-1]] += f" {written}"
        else:
            self.pieces[:] = [written, *[""] * (len(self.pieces) - 1)]


def correct_text(text: str, correct_word: Callable[[str], str | None]) -> str:
    return "".join(piece if piece.isspace() else correct_token(piece, correct_word) for piece in WHITESPACE.split(text))


class CachedCorrector:
    """A word corrector with its answers remembered (texts repeat words; pyspellchecker is slow on long ones)."""

    def __init__(self, correct_word: Callable[[str], str | None]) -> None:
        self._correct_word = correct_word
        self._cache: dict[str, str | None] = {}

    def __call__(self, word: str) -> str | None:
        if word not in self._cache:
            self._cache[word] = self._correct_word(word)
        return self._cache[word]


def _symspell(max_edit_distance: int) -> Any:
    """A ``SymSpell`` over symspellpy's bundled English frequency dictionary."""
    from importlib.resources import files

    from symspellpy import SymSpell

    speller = SymSpell(max_dictionary_edit_distance=max_edit_distance)
    dictionary = files("symspellpy") / "frequency_dictionary_en_82_765.txt"
    if not speller.load_dictionary(str(dictionary), term_index=0, count_index=1):
        raise FileNotFoundError(f"symspellpy's bundled dictionary {dictionary} could not be read")
    return speller


def symspell_word_corrector(max_edit_distance: int = 2, speller: Any = None) -> Callable[[str], str | None]:
    """symspellpy's closest, most frequent suggestion for a word (``speller``: a ``SymSpell`` loaded with that
    edit distance; default: a new one)."""
    from symspellpy import Verbosity

    speller = _symspell(max_edit_distance) if speller is None else speller

    def correct(word: str) -> str | None:
        suggestions = speller.lookup(word, Verbosity.CLOSEST, max_edit_distance=max_edit_distance)
        return suggestions[0].term if suggestions else None

    return CachedCorrector(correct)


@cache
def word_counts() -> dict[str, int]:
    """How often each word of symspellpy's English frequency dictionary occurs in its source (Google's n-grams:
    "the" about 2.3e10, the 9,000th word about 5e6), loaded once per process."""
    from importlib.resources import files

    lines = (files("symspellpy") / "frequency_dictionary_en_82_765.txt").read_text(encoding="utf-8").splitlines()
    return {word: int(count) for word, count in (line.split() for line in lines if line.strip())}


@cache
def bigram_counts() -> dict[tuple[str, str], int]:
    """How often each pair of words of symspellpy's English bigram dictionary occurs in its source ("they went"
    about 1.1e8, "hey guys" 1.4e7; 242,342 pairs), loaded once per process."""
    from importlib.resources import files

    text = (files("symspellpy") / "frequency_bigramdictionary_en_243_342.txt").read_text(encoding="utf-8")
    return {
        (first, second): int(count) for first, second, count in (line.split() for line in text.splitlines() if line)
    }


def context_count(previous: str | None, word: str, following: str | None) -> int:
    """How often ``word`` follows ``previous`` plus how often ``following`` follows it, in ``bigram_counts`` (lower
    case; a neighbour of None counts nothing): 0 where neither pair is among its 242,342."""
    counts = bigram_counts()
    before = counts.get((previous, word), 0) if previous else 0
    return before + (counts.get((word, following), 0) if following else 0)


@lru_cache(maxsize=65536)
def one_edit_words(word: str) -> tuple[str, ...]:
    """The words of symspellpy's English frequency dictionary one edit from the lower-case ``word`` (a letter
    added, dropped, changed, or two neighbours swapped), most frequent first."""
    from symspellpy import Verbosity

    suggestions = _shared_symspell(1).lookup(word, Verbosity.ALL, max_edit_distance=1)
    return tuple(suggestion.term for suggestion in suggestions if suggestion.distance == 1)


_SHARED: dict[int, Callable[[str], str | None]] = {}
_SHARED_SPELLERS: dict[int, Any] = {}
_SHARED_LOCK = threading.Lock()


def _shared_symspell(max_edit_distance: int) -> Any:
    """One ``SymSpell`` per edit distance and process (about 70 MB and two seconds each)."""
    with _SHARED_LOCK:
        if max_edit_distance not in _SHARED_SPELLERS:
            _SHARED_SPELLERS[max_edit_distance] = _symspell(max_edit_distance)
        return _SHARED_SPELLERS[max_edit_distance]


def shared_symspell_corrector(max_edit_distance: int = 2) -> Callable[[str], str | None]:
    """One ``symspell_word_corrector`` per process (loading the dictionary takes about a second)."""
    speller = _shared_symspell(max_edit_distance)
    with _SHARED_LOCK:
        if max_edit_distance not in _SHARED:
            _SHARED[max_edit_distance] = symspell_word_corrector(max_edit_distance, speller)
        return _SHARED[max_edit_distance]


_WORD_LIST: list[frozenset[str]] = []


# forms of one word that British and American English write either way, which breame's table of spellings lacks
# (the shipped speller wrote "among" for "amongst" within a sentence)
WORD_FORM_PAIRS = (
    ("amongst", "among"), ("amidst", "amid"), ("whilst", "while"), ("towards", "toward"),
    ("afterwards", "afterward"), ("backwards", "backward"), ("forwards", "forward"), ("upwards", "upward"),
    ("downwards", "downward"), ("learnt", "learned"), ("spelt", "spelled"), ("dreamt", "dreamed"),
    ("burnt", "burned"), ("spoilt", "spoiled"), ("leapt", "leaped"), ("knelt", "kneeled"), ("dwelt", "dwelled"),
    ("smelt", "smelled"), ("spilt", "spilled"),
)  # fmt: skip


@cache
def variety_pairs() -> frozenset[tuple[str, str]]:
    """Every (word, the same word in the other variety of English) pair of breame's table of British and American
    spellings (neighbour/neighbor, grey/gray) and of ``WORD_FORM_PAIRS`` (amongst/among), either way round, in lower
    case."""
    from breame.data.spelling_constants import AMERICAN_ENGLISH_SPELLINGS, BRITISH_ENGLISH_SPELLINGS

    pairs = set(BRITISH_ENGLISH_SPELLINGS.items()) | set(AMERICAN_ENGLISH_SPELLINGS.items()) | set(WORD_FORM_PAIRS)
    return frozenset(pairs | {(b, a) for a, b in pairs})


def shared_word_list() -> frozenset[str]:
    """The English words pyspellchecker knows (about 160,000: US and UK spellings and rare words symspellpy's 82,765
    lack, such as "harbor", "dueled", "coffined") and the British and American spellings of breame's table (600 of
    its 1,730 British ones, such as "baptises" and "amortise", are in neither list), lower case, loaded once per
    process."""
    with _SHARED_LOCK:
        if not _WORD_LIST:
            from spellchecker import SpellChecker

            varieties = {word for pair in variety_pairs() for word in pair}
            _WORD_LIST.append(frozenset(SpellChecker().word_frequency.keys()) | varieties)
        return _WORD_LIST[0]


def is_dictionary_word(word: str) -> bool:
    """Whether a lower-case word is in symspellpy's dictionary or pyspellchecker's larger word list."""
    return word in shared_word_list() or shared_symspell_corrector()(word) == word


class SpellCheckedSource:
    """A batch's source token ids, rewritten as the ids of the same texts after a word-by-word spell check; a
    copying proposer copies from these (``SpeculationOptions.spellcheck_copy``)."""

    def __init__(self, tokenizer, correct_word: Callable[[str], str | None] | None = None) -> None:
        self.tokenizer = tokenizer
        self.correct_word = correct_word if correct_word is not None else shared_symspell_corrector()

    def __call__(self, sources: list[list[int]]) -> list[list[int]]:
        texts = self.tokenizer.batch_decode(sources, skip_special_tokens=True)
        checked = [correct_text(text, self.correct_word) for text in texts]
        return [
            source if new == text else self.tokenizer(new)["input_ids"]
            for source, text, new in zip(sources, texts, checked, strict=True)
        ]
