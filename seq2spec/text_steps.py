"""What ``Seq2SeqSpeculator.correct`` does to texts around the model: capitals folded before it reads them
(``seq2spec.capitals``), dictionary words it garbled put back after (``seq2spec.dictionary_words``).

The recipes run their plain greedy references through the same steps, so that a reference and ``correct`` differ
only in how the model's output is decoded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from seq2spec.capitals import fold_capitals
from seq2spec.dictionary_words import keep_dictionary_words_of


@dataclass(frozen=True)
class TextSteps:
    """``fold_capitals``: capitalised near-dictionary words go to the model in lower case and get their capitals
    back; ``keep_dictionary_words``: a dictionary word the model made into a non-word is given back as written."""

    fold_capitals: bool = False
    keep_dictionary_words: bool = False

    def __post_init__(self) -> None:
        for name in ("fold_capitals", "keep_dictionary_words"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")

    def run(self, texts: list[str], decode: Callable[[list[str]], list[str]]) -> list[str]:
        """``decode(texts)`` (the model's outputs, in order) with these steps around it."""
        if self.fold_capitals:
            folded = fold_capitals(texts)
            decoded = decode([f.text for f in folded])
            outputs = [f.restore(output) for f, output in zip(folded, decoded, strict=True)]
        else:
            outputs = decode(texts)
        if self.keep_dictionary_words:
            outputs = keep_dictionary_words_of(texts, outputs)
        return outputs
