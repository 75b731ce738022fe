"""Quality figures for the evaluation recipes: WER/CER (jiwer), word-level correction precision/recall/F1, and
Whisper-style text normalisation.

Rates are corpus-level: all errors over all reference units. jiwer refuses empty references; here an empty
reference contributes its hypothesis's words (or characters) as insertions and no reference units, and a corpus with
no reference units at all scores 0.0 when nothing was inserted and 1.0 otherwise.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass
class ErrorCounts:
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    reference_length: int = 0

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def rate(self) -> float:
        if self.reference_length:
            return self.errors / self.reference_length
        return 0.0 if self.errors == 0 else 1.0

    def as_dict(self) -> dict:
        return {**asdict(self), "errors": self.errors, "rate": self.rate}


def _check_pairs(references: Sequence[str], hypotheses: Sequence[str]) -> None:
    if len(references) != len(hypotheses):
        raise ValueError(f"{len(references)} references but {len(hypotheses)} hypotheses")


def error_counts(references: Sequence[str], hypotheses: Sequence[str], unit: str = "word") -> ErrorCounts:
    """Substitutions, deletions and insertions of ``hypotheses`` against ``references`` (``unit``: word or char)."""
    import jiwer

    _check_pairs(references, hypotheses)
    if unit not in ("word", "char"):
        raise ValueError(f"unit must be 'word' or 'char', got {unit!r}")
    counts = ErrorCounts()
    scored_refs, scored_hyps = [], []
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        if reference.strip():
            scored_refs.append(reference)
            scored_hyps.append(hypothesis)
        else:  # jiwer cannot score an empty reference: everything hypothesised is inserted
            counts.insertions += len(hypothesis.split()) if unit == "word" else len(hypothesis.strip())
    if scored_refs:
        process = jiwer.process_words if unit == "word" else jiwer.process_characters
        result = process(scored_refs, scored_hyps)
        counts.substitutions += result.substitutions
        counts.deletions += result.deletions
        counts.insertions += result.insertions
        counts.reference_length += result.hits + result.substitutions + result.deletions
    return counts


def wer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    return error_counts(references, hypotheses, "word").rate


def cer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    return error_counts(references, hypotheses, "char").rate


# ----------------------------------------------------------------------------- corrections


@dataclass
class CorrectionCounts:
    """Word-level edits (M2-style): a *needed* edit turns source words into reference words; a *made* edit turns
    source words into output words. ``correct``: made and needed (the right fix); ``wrong``: made but not needed
    (a correct word changed, or a wrong word changed into another wrong one); ``missed``: needed but not made
    (left wrong)."""

    correct: int = 0
    wrong: int = 0
    missed: int = 0

    @property
    def precision(self) -> float:
        made = self.correct + self.wrong
        return self.correct / made if made else 1.0

    @property
    def recall(self) -> float:
        needed = self.correct + self.missed
        return self.correct / needed if needed else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "precision": self.precision, "recall": self.recall, "f1": self.f1}


def word_edits(source: str, target: str) -> set[tuple[int, int, tuple[str, ...]]]:
    """The edits turning ``source`` into ``target`` as (start, end, replacement words) over source word indices."""
    a, b = source.split(), target.split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return {(i1, i2, tuple(b[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"}


def correction_counts(sources: Sequence[str], references: Sequence[str], outputs: Sequence[str]) -> CorrectionCounts:
    if not len(sources) == len(references) == len(outputs):
        raise ValueError(f"{len(sources)} sources, {len(references)} references, {len(outputs)} outputs")
    counts = CorrectionCounts()
    for source, reference, output in zip(sources, references, outputs, strict=True):
        needed, made = word_edits(source, reference), word_edits(source, output)
        counts.correct += len(needed & made)
        counts.wrong += len(made - needed)
        counts.missed += len(needed - made)
    return counts


# ----------------------------------------------------------------------------- typos, clean sentences, broken words


@dataclass
class TypoCounts:
    """Per word, over source/reference/output triples (words split at whitespace, aligned with difflib).

    A *typo* is a source word that differs from its reference word (one for one; a split or merged word, where
    the counts differ, is one typo); it is *fixed* when its reference word(s) come out aligned in the output. A
    typo is *capitalised* when its reference word starts with a capital letter (sentence-initial words included).
    A *clean* sentence has source == reference; it is *unchanged* when the output equals it. A *correct* word is a
    source word equal to its reference word; it is *broken* when the output does not keep it."""

    typos: int = 0
    fixed: int = 0
    capitalised_typos: int = 0
    capitalised_fixed: int = 0
    clean_sentences: int = 0
    clean_unchanged: int = 0
    correct_words: int = 0
    broken_words: int = 0

    @staticmethod
    def _share(part: int, whole: int) -> float:
        return part / whole if whole else 0.0

    @property
    def fixed_share(self) -> float:
        return self._share(self.fixed, self.typos)

    @property
    def capitalised_fixed_share(self) -> float:
        return self._share(self.capitalised_fixed, self.capitalised_typos)

    @property
    def lowercase_fixed_share(self) -> float:
        return self._share(self.fixed - self.capitalised_fixed, self.typos - self.capitalised_typos)

    @property
    def clean_unchanged_share(self) -> float:
        return self._share(self.clean_unchanged, self.clean_sentences)

    @property
    def broken_share(self) -> float:
        return self._share(self.broken_words, self.correct_words)

    def as_dict(self) -> dict:
        shares = ("fixed", "capitalised_fixed", "lowercase_fixed", "clean_unchanged", "broken")
        return {**asdict(self), **{f"{name}_share": getattr(self, f"{name}_share") for name in shares}}


def _kept(a: list[str], b: list[str]) -> set[int]:
    """Indices of ``a``'s words that difflib aligns with an equal word of ``b``."""
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return {i for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal" for i in range(i1, i2)}


def _capitalised(word: str) -> bool:
    return next((ch for ch in word if ch.isalpha()), "").isupper()


def typo_counts(sources: Sequence[str], references: Sequence[str], outputs: Sequence[str]) -> TypoCounts:
    if not len(sources) == len(references) == len(outputs):
        raise ValueError(f"{len(sources)} sources, {len(references)} references, {len(outputs)} outputs")
    counts = TypoCounts()
    for source, reference, output in zip(sources, references, outputs, strict=True):
        if source == reference:
            counts.clean_sentences += 1
            counts.clean_unchanged += output == source
        src, ref, out = source.split(), reference.split(), output.split()
        kept_in_output = _kept(src, out)
        reference_in_output = _kept(ref, out)
        made = None
        matcher = difflib.SequenceMatcher(a=src, b=ref, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                counts.correct_words += i2 - i1
                counts.broken_words += sum(i not in kept_in_output for i in range(i1, i2))
                continue
            if j1 == j2:  # a source word to delete: fixed when the output makes that very edit
                made = word_edits(source, output) if made is None else made
                typos = [(None, (i1, i2, ()) in made)]
            elif i2 - i1 == j2 - j1:  # word for word: each word is a typo of its own
                typos = [(j, j in reference_in_output) for j in range(j1, j2)]
            else:  # split or merged words: one typo
                typos = [(j1, all(j in reference_in_output for j in range(j1, j2)))]
            for j, fixed in typos:
                capitalised = _capitalised(ref[j] if j is not None else src[i1])
                counts.typos += 1
                counts.fixed += fixed
                counts.capitalised_typos += capitalised
                counts.capitalised_fixed += capitalised and fixed
    return counts


# ----------------------------------------------------------------------------- what real text must keep

SYMBOLS = frozenset("@_=~<>{}|\\#*[]")  # ASCII characters many correction vocabularies lack


def special_characters(text: str) -> Counter:
    """The characters of ``text`` a corrector's vocabulary is likely to lack: non-ASCII ones and ``SYMBOLS``."""
    return Counter(c for c in text if not c.isspace() and (not c.isascii() or c in SYMBOLS))


@dataclass
class RealTextCounts:
    """Over source/reference/output triples: special characters (``special_characters``) and protected tokens
    (words ``seq2spec.spelling.protection.is_technical`` keeps: numbers, URLs, paths, identifiers, ...) of the source
    the output still holds, as often as the source does; lines whose output is the reference."""

    characters: int = 0
    characters_kept: int = 0
    protected_tokens: int = 0
    protected_kept: int = 0
    lines: int = 0
    lines_right: int = 0

    def as_dict(self) -> dict:
        shares = {
            "characters_kept_share": self.characters_kept / self.characters if self.characters else 1.0,
            "protected_kept_share": self.protected_kept / self.protected_tokens if self.protected_tokens else 1.0,
            "lines_right_share": self.lines_right / self.lines if self.lines else 0.0,
        }
        return {**asdict(self), **shares}


def real_text_counts(sources: Sequence[str], references: Sequence[str], outputs: Sequence[str]) -> RealTextCounts:
    from seq2spec.spelling.protection.word_rules import is_technical

    _check_pairs(references, outputs)
    _check_pairs(sources, outputs)
    counts = RealTextCounts()
    for source, reference, output in zip(sources, references, outputs, strict=True):
        wanted, found = special_characters(source), special_characters(output)
        counts.characters += sum(wanted.values())
        counts.characters_kept += sum(min(count, found[c]) for c, count in wanted.items())
        tokens = Counter(token for token in source.split() if is_technical(token))
        said = Counter(output.split())
        counts.protected_tokens += sum(tokens.values())
        counts.protected_kept += sum(min(count, said[token]) for token, count in tokens.items())
        counts.lines += 1
        counts.lines_right += output == reference
    return counts


# ----------------------------------------------------------------------------- normalisation


def text_normalizer(language: str | None):
    """Whisper's English normaliser for English (``None`` counts as English), its basic one otherwise."""
    from transformers.models.whisper.english_normalizer import BasicTextNormalizer, EnglishTextNormalizer

    english = language is None or language.lower() in ("en", "english", "<|en|>")
    normalise = EnglishTextNormalizer({}) if english else BasicTextNormalizer()

    def normalised(text: str) -> str:
        return " ".join(normalise(text).split())

    return normalised
