"""``Layout``: a text's words and the whitespace between them, what the model reads of them, and its output put back
in their places."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from seq2spec.spelling.protection.markup import markup_spans
from seq2spec.spelling.protection.phrases import quotation_text, quotations
from seq2spec.spelling.protection.rules import ALL_RULES, RuleSet
from seq2spec.spelling.protection.shouted import read_shouted_code_lower, sentence_case, shouted_word, shouted_words
from seq2spec.spelling.protection.span_rules import broken_words
from seq2spec.spelling.protection.word import Kind, Word, read_word
from seq2spec.spelling.protection.writing import CURLY_APOSTROPHE, TokenizerWriting

WHITESPACE = re.compile(r"(\s+)")


@dataclass(frozen=True)
class Layout:
    """A text's words and the whitespace around them: ``leading + words[0] + gaps[0] + ... + words[-1] + gaps[-1]``
    is the text (``gaps[-1]`` its trailing whitespace)."""

    leading: str
    words: list[Word]
    gaps: list[str]
    apostrophe: str | None = None  # how apostrophes the model adds are written (None: as it writes them)
    shouted: bool = False  # written in capitals: the words the model adds are written in capitals too

    @classmethod
    def of(
        cls,
        text: str,
        writing: TokenizerWriting,
        apostrophe: str | None = None,
        quote_kept: Callable[[str], bool] | None = None,
        rules: RuleSet = ALL_RULES,
    ) -> Layout:
        """The layout of ``text`` under ``rules``; the words of a quotation for whose text ``quote_kept`` is true (one
        in another language) are kept as written too."""
        body = text.strip()
        if not body:
            return cls(text, [], [], apostrophe)
        leading, trailing = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
        tokens = WHITESPACE.split(body)  # word, gap, word, ..., word
        words = tokens[::2]
        kept = rules.kept(words)
        for start, end in quotations(words) if quote_kept else []:
            if quote_kept(quotation_text(words[start:end])):
                kept.update(range(start, end))
        shouted = shouted_words(words) - kept if rules.reads("shouted") else set()
        contractions = rules.reads("contractions")
        laid = [
            shouted_word(token, writing, rules.keeps_word, contractions=contractions)
            if index in shouted
            else read_word(token, writing, index in kept or rules.keeps_word(token), contractions=contractions)
            for index, token in enumerate(words)
        ]
        if shouted:
            read_shouted_code_lower(laid)
            sentence_case(laid)
        for index, (read, markup) in markup_spans(words).items() if rules.reads("markup") else ():
            inner = read_word(read, writing, index in kept or rules.keeps_word(read), contractions=contractions)
            free = inner.kind is Kind.FREE
            laid[index] = Word(words[index], inner.reads, inner.kind if free else Kind.KEPT, markup if free else None)
        for index, whole in broken_words(words).items() if rules.reads("broken_words") else ():
            reads = whole if writing.writes(whole) else writing.stand_in(whole)  # both parts kept, read whole
            laid[index : index + 2] = [Word(words[index], reads, Kind.KEPT), Word(words[index + 1], "", Kind.KEPT)]
        return cls(leading, laid, [*tokens[1::2], trailing], apostrophe, bool(shouted))

    @property
    def model_text(self) -> str:
        """What the model reads: the words it can read, one space apart."""
        return " ".join(word.reads for word in self.words if word.reads)

    @property
    def needs_model(self) -> bool:
        """Whether there is anything for the model to correct."""
        return any(word.kind is not Kind.KEPT and word.reads for word in self.words)

    def text(self) -> str:
        return self.leading + "".join(word.text + gap for word, gap in zip(self.words, self.gaps, strict=True))

    def assemble(self, output: str) -> str | None:
        """The text with the model's ``output`` (for ``model_text``) in its words' places; None where a kept or
        mapped word cannot be put back in place."""
        read = [index for index, word in enumerate(self.words) if word.reads]
        tokens = WHITESPACE.split(output.strip())
        said = [token for token in tokens[::2] if token]
        said_gaps = [*tokens[1::2], ""]
        placed = _aligned([self.words[i].reads for i in read], said)
        where = {read[i]: j for i, j in placed.items()}
        if any(not self._free(i) and i not in where for i in read):  # kept, mapped or marked up: must be in place
            return None
        source_of = {j: i for i, j in where.items()}
        # (source index or None, text, the output's whitespace after it) per word of the result, in order
        units: list[tuple[int | None, str, str]] = []
        for j, word in enumerate(said):
            source = source_of.get(j)
            if source is not None:
                text = self.words[source].restored(word, self.apostrophe)
            else:
                text = word.upper() if self.shouted else word
            units.append((source, text, said_gaps[j]))
        units = self._insert_unread(units, where)
        if units is None:
            return None
        parts = [self.leading]
        for position, (source, text, gap) in enumerate(units):
            parts.append(text)
            if position + 1 < len(units):
                following = units[position + 1][0]
                neighbours = source is not None and following == source + 1
                parts.append(self.gaps[source] if neighbours else gap or " ")
        parts.append(self.gaps[-1] if self.gaps else "")
        return "".join(parts)

    def _insert_unread(
        self, units: list[tuple[int | None, str, str]], where: dict[int, int]
    ) -> list[tuple[int | None, str, str]] | None:
        """``units`` with the words the model did not read after the nearest read word before them, or before the
        nearest after them; None where neither was placed."""
        unread = [index for index, word in enumerate(self.words) if not word.reads]
        if not unread:
            return units
        position_of = {source: position for position, (source, _, _) in enumerate(units) if source is not None}
        after: dict[int, list[int]] = {}
        for index in unread:
            before = next((i for i in range(index - 1, -1, -1) if self.words[i].reads), None)
            behind = next((i for i in range(index + 1, len(self.words)) if self.words[i].reads), None)
            if before is not None and before in where:
                after.setdefault(position_of[before], []).append(index)
            elif behind is not None and behind in where:
                after.setdefault(position_of[behind] - 1, []).append(index)
            else:
                return None
        result = [(index, self.words[index].text, " ") for index in after.get(-1, [])]
        for position, unit in enumerate(units):
            result.append(unit)
            result += [(index, self.words[index].text, " ") for index in after.get(position, [])]
        return result

    def _free(self, index: int) -> bool:
        word = self.words[index]
        return word.kind is Kind.FREE and bool(word.reads) and word.markup is None

    def free_runs(self) -> list[Layout]:
        """The runs of neighbouring free words, each as a layout of its own (kept, mapped and unread words and the
        whitespace around them stay as written between them)."""
        runs: list[list[int]] = []
        for index in range(len(self.words)):
            if self._free(index):
                if index == 0 or not self._free(index - 1):
                    runs.append([])
                runs[-1].append(index)
        return [
            Layout(
                "", [self.words[i] for i in run], [*(self.gaps[i] for i in run[:-1]), ""], self.apostrophe, self.shouted
            )
            for run in runs
        ]

    def join_runs(self, corrected: list[str]) -> str:
        """The text with each of ``free_runs()`` replaced by its corrected text."""
        runs = iter(corrected)
        parts = [self.leading]
        last = len(self.words) - 1
        for index, word in enumerate(self.words):
            if not self._free(index):
                parts += [word.text, self.gaps[index]]
                continue
            if index == 0 or not self._free(index - 1):  # a run starts
                parts.append(next(runs))
            if index == last or not self._free(index + 1):  # a run ends
                parts.append(self.gaps[index])
        return "".join(parts)


def _aligned(read: list[str], said: list[str]) -> dict[int, int]:
    """Word ``i`` of ``read`` -> word ``j`` of ``said``, where difflib (case ignored) lines them up one for one."""
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in read], b=[w.lower() for w in said], autojunk=False)
    placed = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            placed.update(zip(range(i1, i2), range(j1, j2), strict=True))
    return placed


def text_apostrophe(text: str) -> str | None:
    """``’`` for a text written with ’ and no ', else None."""
    return CURLY_APOSTROPHE if CURLY_APOSTROPHE in text and "'" not in text else None
