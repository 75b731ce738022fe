"""A noise model for spelling correction closer to how people misspell: real misspellings from codespell's
dictionary, keyboard-neighbour slips, dropped, doubled, inserted and transposed letters, phonetic swaps, real-word
confusions (their/there, form/from, then/than, its/it's, ...), words split in two and neighbours merged into one.

Every kind applies to capitalised and sentence-initial words as to lower-case ones (the word's case pattern is
kept), so capitalised typos come at the share capitalised words have in the text. Words the reader cannot recover
by spelling alone are left alone: all-caps acronyms, mixed-case names (``AppArmor``), words with digits or other
non-letters. A corrupted word always differs from the clean one, so the clean sentence is the reference that
recovers every typo.

Used by ``make_ood_spelling_set.py``; a training recipe can reuse ``HumanNoise`` (``noise(sentence, rng,
errors)`` returns the noisy sentence and the kinds applied).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from classical_spellers import apply_case, case_pattern
from speller_data import KEYBOARD_NEIGHBOURS

# words confused with each other although each is spelled right; a group's members replace one another
REAL_WORD_CONFUSIONS: tuple[tuple[str, ...], ...] = (
    ("their", "there", "they're"),
    ("form", "from"),
    ("then", "than"),
    ("its", "it's"),
    ("loose", "lose"),
    ("your", "you're"),
    ("affect", "effect"),
    ("accept", "except"),
    ("to", "too"),
    ("were", "where"),
    ("whose", "who's"),
    ("quiet", "quite"),
    ("advice", "advise"),
    ("weather", "whether"),
    ("principal", "principle"),
    ("complement", "compliment"),
    ("breath", "breathe"),
    ("choose", "chose"),
    ("of", "off"),
    ("lead", "led"),
    ("passed", "past"),
    ("week", "weak"),
    ("new", "knew"),
    ("no", "know"),
    ("right", "write"),
    ("here", "hear"),
    ("through", "threw"),
    ("buy", "by"),
    ("an", "and"),
    ("dose", "does"),
    ("site", "cite"),
    ("whole", "hole"),
    ("piece", "peace"),
    ("trial", "trail"),
    ("lets", "let's"),
)
CONFUSION = {word: tuple(other for other in group if other != word) for group in REAL_WORD_CONFUSIONS for word in group}

# sound-alike spellings: (written, misspelled); applied at one occurrence inside the word
PHONETIC_SWAPS: tuple[tuple[str, str], ...] = (
    ("ie", "ei"),
    ("ei", "ie"),
    ("ance", "ence"),
    ("ence", "ance"),
    ("ant", "ent"),
    ("ent", "ant"),
    ("able", "ible"),
    ("ible", "able"),
    ("tion", "sion"),
    ("sion", "tion"),
    ("ph", "f"),
    ("ck", "k"),
    ("ce", "se"),
    ("se", "ce"),
    ("sc", "s"),
    ("ary", "ery"),
    ("ery", "ary"),
    ("ate", "ite"),
    ("ee", "ea"),
    ("ea", "ee"),
    ("ou", "o"),
    ("wh", "w"),
    ("kn", "n"),
    ("ght", "t"),
    ("tch", "ch"),
    ("dge", "ge"),
    ("ss", "s"),
    ("cc", "c"),
    ("mm", "m"),
    ("ll", "l"),
    ("rr", "r"),
    ("pp", "p"),
    ("tt", "t"),
    ("ment", "mant"),
    ("ous", "us"),
    ("y", "i"),
    ("c", "k"),
    ("s", "z"),
    ("er", "or"),
    ("or", "er"),
    ("al", "el"),
    ("le", "el"),
)

# a word that starts with one of these and has at least 3 letters after it may be written as two words
SPLIT_PREFIXES = (
    "some",
    "any",
    "every",
    "with",
    "without",
    "in",
    "on",
    "out",
    "over",
    "under",
    "up",
    "back",
    "down",
    "file",
    "no",
    "them",
    "your",
    "it",
    "how",
    "where",
    "when",
    "what",
    "there",
    "here",
    "may",
    "can",
    "for",
    "be",
    "after",
    "data",
    "work",
    "key",
    "pass",
    "user",
    "net",
    "time",
    "web",
)

# the share of typos of each kind; a kind with nothing to apply to in a sentence gives way to the others
DEFAULT_KIND_WEIGHTS = {
    "codespell": 0.30,
    "keyboard": 0.12,
    "drop": 0.09,
    "double": 0.07,
    "insert": 0.04,
    "transpose": 0.09,
    "phonetic": 0.11,
    "real_word": 0.10,
    "split": 0.04,
    "merge": 0.04,
}

_TOKEN = re.compile(r"^([^A-Za-z0-9]*)([A-Za-z]+(?:'[A-Za-z]+)?)([^A-Za-z0-9]*)$")


def split_token(token: str) -> tuple[str, str, str] | None:
    """(leading punctuation, word, trailing punctuation), or None when the token is not one plain word."""
    match = _TOKEN.match(token)
    return match.groups() if match else None  # type: ignore[return-value]


def _single_edit(core: str, kind: str, rng: random.Random) -> str | None:
    letters = len(core)
    if kind == "keyboard":
        i = rng.randrange(letters)
        near = KEYBOARD_NEIGHBOURS.get(core[i], "")
        return core[:i] + rng.choice(near) + core[i + 1 :] if near else None
    if kind == "insert":
        i = rng.randrange(letters)
        near = KEYBOARD_NEIGHBOURS.get(core[i], "")
        j = i + rng.randint(0, 1)  # the stray key before or after the one meant
        return core[:j] + rng.choice(near) + core[j:] if near else None
    if kind == "drop":
        if letters < 4:
            return None
        i = rng.randrange(1, letters)  # the first letter is kept: people rarely drop it
        return core[:i] + core[i + 1 :]
    if kind == "double":
        i = rng.randrange(letters)
        return core[: i + 1] + core[i] + core[i + 1 :]
    if kind == "transpose":
        spots = [i for i in range(letters - 1) if core[i] != core[i + 1]]
        if not spots:
            return None
        i = rng.choice(spots)
        return core[:i] + core[i + 1] + core[i] + core[i + 2 :]
    if kind == "phonetic":
        options = [(i, a, b) for a, b in PHONETIC_SWAPS for i in range(1, letters) if core.startswith(a, i)]
        if not options:
            return None
        i, a, b = rng.choice(options)
        return core[:i] + b + core[i + len(a) :]
    raise ValueError(kind)


@dataclass
class HumanNoise:
    """Corrupts ``errors`` words of a sentence (words separated by single spaces).

    ``typos``: lower-case correct word -> its misspellings (``speller_data.load_typos()``, codespell's list).
    """

    typos: dict[str, list[str]]
    kind_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_KIND_WEIGHTS))
    min_letters: int = 3  # shorter words only take real-word confusions and merges
    capitalised_weight: float = 1.0  # how much likelier a capitalised word is picked for a typo than a lower-case one
    untouchable: Callable[[str], bool] | None = None  # words never corrupted (nor merged), whatever their letters

    def eligible(self, kind: str, words: list[str], index: int, used: set[int]) -> bool:
        if index in used:
            return False
        untouchable = self.untouchable
        if untouchable is not None and (
            untouchable(words[index]) or (kind == "merge" and index + 1 < len(words) and untouchable(words[index + 1]))
        ):
            return False
        parts = split_token(words[index])
        if parts is None:
            return False
        core = parts[1]
        pattern = case_pattern(core)
        if pattern is None or (pattern == "upper" and len(core) > 1):
            return False  # acronyms and mixed-case names stay as written
        lower = core.lower()
        if kind == "real_word":
            return lower in CONFUSION
        if kind == "merge":
            if index + 1 >= len(words) or index + 1 in used or parts[2]:
                return False
            following = split_token(words[index + 1])
            return (
                following is not None
                and not following[0]
                and case_pattern(following[1]) == "lower"
                and "'" not in core + following[1]
                and min(len(core), len(following[1])) <= 4
            )
        if "'" in core or len(core) < self.min_letters:
            return False
        if kind == "codespell":
            return lower in self.typos
        if kind == "split":
            return any(lower.startswith(p) and len(lower) - len(p) >= 3 for p in SPLIT_PREFIXES)
        return True

    def corrupt(self, kind: str, words: list[str], index: int, rng: random.Random) -> list[str] | None:
        """The words with word ``index`` corrupted by ``kind`` (a merge also takes the next word), or None."""
        before, core, after = split_token(words[index])  # type: ignore[misc]
        pattern = case_pattern(core) or "lower"
        lower = core.lower()
        if kind == "merge":
            merged = words[index] + words[index + 1]
            return words[:index] + [merged] + words[index + 2 :]
        if kind == "codespell":
            new = rng.choice(self.typos[lower])
        elif kind == "real_word":
            new = rng.choice(CONFUSION[lower])
        elif kind == "split":
            prefix = rng.choice([p for p in SPLIT_PREFIXES if lower.startswith(p) and len(lower) - len(p) >= 3])
            new = prefix + " " + lower[len(prefix) :]
        else:
            new = _single_edit(lower, kind, rng)
        if not new or new == lower:
            return None
        return words[:index] + (before + apply_case(new, pattern) + after).split(" ") + words[index + 1 :]

    def _pick(self, words: list[str], spots: list[int], rng: random.Random) -> int:
        """One of the spots, capitalised words weighted by ``capitalised_weight`` (1: uniform)."""
        if self.capitalised_weight == 1.0:
            return rng.choice(spots)
        weights = [self.capitalised_weight if case_pattern(split_token(words[i])[1]) == "title" else 1.0 for i in spots]  # type: ignore[index]
        return rng.choices(spots, weights)[0]

    def __call__(self, sentence: str, rng: random.Random, errors: int) -> tuple[str, list[str]]:
        """The sentence with up to ``errors`` typos (fewer when it has too few words to corrupt), and their kinds."""
        words = sentence.split(" ")
        used: set[int] = set()  # indices into ``words`` already corrupted (or next to a merge)
        kinds: list[str] = []
        names, weights = list(self.kind_weights), list(self.kind_weights.values())
        for _ in range(errors):
            for _attempt in range(20):
                kind = rng.choices(names, weights)[0]
                spots = [i for i in range(len(words)) if self.eligible(kind, words, i, used)]
                if not spots:
                    continue
                if kind == "real_word":  # each confusable word as likely as another, however often it occurs
                    choice = rng.choice(sorted({split_token(words[i])[1].lower() for i in spots}))  # type: ignore[index]
                    spots = [i for i in spots if split_token(words[i])[1].lower() == choice]  # type: ignore[index]
                index = self._pick(words, spots, rng)
                corrupted = self.corrupt(kind, words, index, rng)
                if corrupted is None:
                    continue
                grown = len(corrupted) - len(words)  # +1 for a split, -1 for a merge
                used = {i if i < index else i + grown for i in used if i != index}
                used.update(range(index - 1, index + 2 + max(grown, 0)))  # keep typos apart: each stays readable
                words = corrupted
                kinds.append(kind)
                break
        return " ".join(words), kinds
