"""``SpellingPipeline``: the text steps ``Seq2SeqSpeculator.correct`` takes around a correction model, as its
``SpellingSettings`` say: long texts cut into sentence pieces (``pieces``), what the model cannot write or must not
change kept out of its way (``protection``), capitals folded before it reads a piece (``capitals``), the pieces decoded,
non-words it left checked (``capital_check``), dictionary and unknown words it garbled put back (``dictionary_words``),
words it rewrote in the other variety of English put back (``varieties``), and what was kept put back in place. Every
step works on one piece at a time, so its cost grows with the length of the text, however long the text.

The decoding itself is a function given to the pipeline, so the recipes run their plain greedy references through the
same steps and a reference and ``correct`` differ only in how the model's output is decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from seq2spec.spelling.capital_check import CapitalCheck, Scorer
from seq2spec.spelling.capitals import fold_capitals
from seq2spec.spelling.dictionary_words import keep_dictionary_words_of
from seq2spec.spelling.languages import in_other_language, not_english, quote_in_other_language
from seq2spec.spelling.pieces import PiecedTexts
from seq2spec.spelling.protection import ENGLISH_RULES, Layout, RuleSet, TokenizerWriting, text_apostrophe
from seq2spec.spelling.repeated_words import keep_repeated_words_of
from seq2spec.spelling.settings import SpellingSettings
from seq2spec.spelling.varieties import keep_spelling_varieties_of

# the model's outputs for a list of texts, in order
Decode = Callable[[list[str]], list[str]]


class InputTooLongError(ValueError):
    """A text longer than the model accepts: ``index`` in the call's texts, its ``tokens``, the model's ``limit``;
    ``count`` texts were over it."""

    def __init__(self, index: int, tokens: int, limit: int, count: int = 1, *, piece: bool = False) -> None:
        if piece:
            message = (
                f"texts[{index}] has a piece of {tokens} tokens, more than the model's {limit}-token input limit; "
                f"shorten it or pass truncate=True to keep the first {limit} tokens of each piece"
            )
        else:
            message = (
                f"{count} text(s) exceed the model's {limit}-token input limit (texts[{index}] has {tokens} tokens); "
                f"shorten them or pass truncate=True to keep the first {limit} tokens"
            )
        super().__init__(message)
        self.index, self.tokens, self.limit, self.count, self.piece = index, tokens, limit, count, piece

    def of_text(self, index: int, *, piece: bool | None = None) -> InputTooLongError:
        """The same error for the text at ``index`` of the caller's list (of a piece of it, with ``piece``)."""
        piece = self.piece if piece is None else piece
        return InputTooLongError(index, self.tokens, self.limit, self.count, piece=piece)


@dataclass(frozen=True)
class SpellingPipeline:
    """``pipeline(texts)``: each text corrected by ``decode`` with the steps of ``settings`` around it. ``score`` is
    the model's scorer for the capital check (needed when ``settings.check_capitals``), ``tokenizer`` the model's
    (needed when ``settings.protect``: what it cannot write is kept out of the model's way)."""

    settings: SpellingSettings
    decode: Decode
    score: Scorer | None = None
    tokenizer: Any = None

    def __post_init__(self) -> None:
        if self.settings.checks_scores and self.score is None:
            raise ValueError("check_capitals, check_words and check_changes need the model's scorer (score=)")
        if self.settings.protect and self.tokenizer is None:
            raise ValueError("protect needs the model's tokenizer (tokenizer=)")

    def __call__(self, texts: Sequence[str]) -> list[str]:
        marks = [_byte_order_mark(text) for text in texts]
        texts = [text[len(mark) :] for text, mark in zip(texts, marks, strict=True)]
        return [mark + text for mark, text in zip(marks, self._corrected(texts), strict=True)]

    def _corrected(self, texts: list[str]) -> list[str]:
        pieced = PiecedTexts.of(texts, self.settings.split_longer_than)
        owners = [_Owner(index, pieced.splits[index] is not None) for index in pieced.owners]
        read = [i for i, piece in enumerate(pieced.pieces) if not self._returned_as_written(piece)]
        outputs = list(pieced.pieces)
        pieces, piece_owners = [outputs[i] for i in read], [owners[i] for i in read]
        if self.settings.protect:
            corrected = self._protected(pieces, piece_owners, texts)
        else:
            corrected = self._model_steps(pieces, piece_owners)
        for index, output in zip(read, corrected, strict=True):
            outputs[index] = output
        return pieced.join(outputs)

    def _returned_as_written(self, piece: str) -> bool:
        """Whether a piece comes back unread: the settings' ``unchanged`` says so, or it is in another language."""
        unchanged = self.settings.unchanged
        if unchanged is not None and unchanged(piece):
            return True
        return self.settings.keep_other_languages and in_other_language(piece)

    def _protected(self, pieces: list[str], owners: list[_Owner], texts: list[str]) -> list[str]:
        """The pieces corrected with what the model must not change kept as written (``protection``); a piece whose
        kept words the model moved is corrected again in the runs of free words between them."""
        writing = _writing(self.tokenizer)
        apostrophes = {owner.index: text_apostrophe(texts[owner.index]) for owner in owners}
        quote_kept = quote_in_other_language if self.settings.keep_other_languages else None
        rules_for = protection_rules(self.settings)
        layouts = [
            Layout.of(piece, writing, apostrophes[owner.index], quote_kept, rules_for(piece))
            for piece, owner in zip(pieces, owners, strict=True)
        ]
        outputs = list(pieces)
        needed = [index for index, layout in enumerate(layouts) if layout.needs_model]
        decoded = self._model_steps([layouts[i].model_text for i in needed], [owners[i] for i in needed])
        failed = []
        for index, output in zip(needed, decoded, strict=True):
            assembled = layouts[index].assemble(output)
            if assembled is None:
                failed.append(index)
            else:
                outputs[index] = assembled
        runs = {index: layouts[index].free_runs() for index in failed}
        flat = [(index, run) for index in failed for run in runs[index]]
        decoded = iter(self._model_steps([run.model_text for _, run in flat], [owners[i] for i, _ in flat]))
        for index in failed:
            outputs[index] = layouts[index].join_runs([run.assemble(next(decoded)) for run in runs[index]])
        return outputs

    def _model_steps(self, texts: list[str], owners: list[_Owner]) -> list[str]:
        """The model's outputs for ``texts`` (what it reads, before capitals are folded) with the settings' steps
        around it: a text the model looped on kept as it was read, capitals folded and restored, non-words checked,
        dictionary and unknown words kept, words in the writer's variety of English, and words repeated on
        purpose."""
        if not texts:
            return []
        settings = self.settings
        folded = fold_capitals(texts) if settings.fold_capitals else None
        reads = [f.text for f in folded] if folded else texts
        try:
            outputs = self.decode(reads)
        except InputTooLongError as error:  # name the caller's text (a piece of it, when it was cut)
            owner = owners[error.index]
            raise error.of_text(owner.index, piece=owner.cut) from error
        if settings.keep_looped_texts:
            outputs = [read if runaway(read, output) else output for read, output in zip(reads, outputs, strict=True)]
        if settings.checks_scores:
            check = CapitalCheck(
                self.score,
                settings.capital_check_margin if settings.check_capitals else None,
                initial_margin=settings.capital_check_initial_margin,
                lower_margin=settings.word_check_margin if settings.check_words else None,
                long_lower_margin=settings.long_word_check_margin if settings.check_words else None,
                revert_margin=settings.change_check_margin if settings.check_changes else None,
                nearer_margin=settings.nearer_word_margin if settings.check_nearer_words else None,
                context_margin=settings.context_word_margin if settings.check_context_words else None,
            )
            outputs = check(texts, reads, outputs)
        if folded:
            outputs = [f.restore(output) for f, output in zip(folded, outputs, strict=True)]
        if settings.keep_dictionary_words or settings.keep_unknown_words:
            outputs = keep_dictionary_words_of(
                texts, outputs, dictionary=settings.keep_dictionary_words, unknown=settings.keep_unknown_words
            )
        if settings.keep_spelling_varieties:
            outputs = keep_spelling_varieties_of(texts, outputs)
        if settings.keep_repeated_words:
            outputs = keep_repeated_words_of(texts, outputs)
        return outputs


def protection_rules(settings: SpellingSettings) -> Callable[[str], RuleSet]:
    """The protection rules for a text: those in force, less the English ones (``ENGLISH_RULES``) where the text is
    not English (``settings.texts_in_english``; told per text by ``not_english``)."""
    off = frozenset(settings.protection_off)
    rules, other = RuleSet(off), RuleSet(off | ENGLISH_RULES)
    english = settings.texts_in_english
    if english is not None:
        return lambda text: rules if english else other
    return lambda text: other if not_english(text) else rules


BYTE_ORDER_MARK = "\ufeff"


def _byte_order_mark(text: str) -> str:
    """The byte order mark opening ``text`` (a file saved by Notepad, read without ``utf-8-sig``), or "": it is put
    back in front of the corrected text, and the first word is read without it (it was kept as written, unfixed)."""
    return BYTE_ORDER_MARK if text.startswith(BYTE_ORDER_MARK) else ""


# a correction writes about the letters it reads (a split or a fixed typo adds a few); an output with many more
# repeats itself ("witout" -> "without without"; "... took about --recursive --storage---storage-class s3 cupACIER
# ./25/ took about 5).")
RUNAWAY_SLACK = 4  # letters (the spelling sets' references add at most 3 to a text)
RUNAWAY_GROWTH = 0.25  # of the letters read
# nor does it drop most of the words it reads: a loop on a run of symbols wrote "No Notice ----" (131 dashes) for a
# sentence of 25 words
COLLAPSE_WORDS = 8  # read, at least
COLLAPSE_SHARE = 0.5  # of the words read, written at most
# nor does it write a phrase over and over that the text holds once: reading a Markdown table's rows without their
# pipes, the speller wrote "last name first name first name first name first name" for "last name first name other
# last name first name"
LOOP_REPEATS = 3  # times in a row, at least, of a phrase of up to LOOP_PHRASE_WORDS words
LOOP_PHRASE_WORDS = 3


def runaway(read: str, output: str) -> bool:
    """Whether ``output`` holds more letters than a correction of ``read`` can (the model ran on, repeating what
    it read), or, of a text of ``COLLAPSE_WORDS`` words or more, fewer than ``COLLAPSE_SHARE`` of its words, or
    repeats a phrase the text does not (``looped``); with
    ``keep_looped_texts``, the text comes back as it was read (a loop also rewrites words it has read: "aws" ->
    "laws", "lxde" -> "led")."""
    letters = len("".join(read.split()))
    if len("".join(output.split())) > letters + max(RUNAWAY_SLACK, RUNAWAY_GROWTH * letters):
        return True
    words = len(read.split())
    if words >= COLLAPSE_WORDS and len(output.split()) < COLLAPSE_SHARE * words:
        return True
    return looped(read, output)


def looped(read: str, output: str) -> bool:
    """Whether ``output`` writes a phrase of up to ``LOOP_PHRASE_WORDS`` words ``LOOP_REPEATS`` times or more in a row,
    more times in a row than ``read`` does (case aside): "first name first name first name" for a text holding
    "first name" twice apart."""
    written, said = read.lower().split(), output.lower().split()
    for size in range(1, LOOP_PHRASE_WORDS + 1):
        repeats = most_repeats(said, size)
        if repeats >= LOOP_REPEATS and repeats > most_repeats(written, size):
            return True
    return False


def most_repeats(words: list[str], size: int) -> int:
    """The most times a phrase of ``size`` words is written in a row in ``words`` (1 where none is repeated)."""
    best = 1
    for start in range(size):  # phrases starting at each offset
        count = 1
        for index in range(start + size, len(words) - size + 1, size):
            count = count + 1 if words[index : index + size] == words[index - size : index] else 1
            best = max(best, count)
    return best


@dataclass(frozen=True)
class _Owner:
    """The caller's text a piece comes from, and whether that text was cut into pieces."""

    index: int
    cut: bool


_WRITING: dict[int, tuple[Any, TokenizerWriting]] = {}


def _writing(tokenizer: Any) -> TokenizerWriting:
    """One ``TokenizerWriting`` per tokenizer, so that what it writes is asked once per word."""
    known = _WRITING.get(id(tokenizer))
    if known is None or known[0] is not tokenizer:
        known = _WRITING[id(tokenizer)] = (tokenizer, TokenizerWriting(tokenizer))
    return known[1]
