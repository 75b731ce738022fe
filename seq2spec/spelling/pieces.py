"""Long texts cut into sentence-sized pieces for a corrector trained on single sentences, and put back together.

A correction model trained on sentences of up to N characters repeats and drops text when given a paragraph (the
shipped speller, trained on sentences of at most 140 characters, raised the character error rate of long inputs
instead of lowering it). ``split_text`` cuts a text at sentence ends, then, for a sentence still too long, after
clause punctuation (``,;:``), then between words, so that every piece fits the limit where the words allow it. The
whitespace between pieces is kept as it was: ``join_pieces`` of the corrected pieces gives the corrected text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CLOSERS = "\"'\u201d\u2019\u00bb)\\]\u300d\u300f\uff09\u3011"
# the full stops, question and exclamation marks and commas of scripts written without spaces (Chinese, Japanese):
# a sentence or clause may end there with no whitespace after it
_UNSPACED_ENDS = "\u3002\uff01\uff1f\uff61"
_UNSPACED_CLAUSE_ENDS = "\uff0c\u3001\uff1b\uff1a"
# what may follow an unspaced end for a cut there: not more punctuation of the same sentence, not the text's end
_NEXT_SENTENCE = rf"(?=[^\s.!?,;:{_UNSPACED_ENDS}{_UNSPACED_CLAUSE_ENDS}{_CLOSERS}])"
# the whitespace after a sentence end: . ! ? (or an ellipsis; the full stops and question marks of other scripts:
# 。！？ । ॥ ؟ ۔), then any closing quotes or brackets (a French » after its space too); after a Chinese or Japanese
# end, the whitespace or the empty gap before the next sentence
_SENTENCE_GAP = re.compile(
    rf"(?<=[.!?{_UNSPACED_ENDS}\u0964\u0965\u061f\u06d4])[{_CLOSERS}]*(?:[ \u00a0\u202f]\u00bb)?(\s+)"
    rf"|(?<=[{_UNSPACED_ENDS}])[{_CLOSERS}]*(){_NEXT_SENTENCE}"
)
_CLAUSE_GAP = re.compile(rf"(?<=[,;:{_UNSPACED_CLAUSE_ENDS}])(\s+)|(?<=[{_UNSPACED_CLAUSE_ENDS}])(){_NEXT_SENTENCE}")
_WORD_GAP = re.compile(r"(\s+)")


@dataclass(frozen=True)
class SplitText:
    """``leading + pieces[0] + gaps[0] + pieces[1] + ... + pieces[-1] + gaps[-1]`` is the text; no piece starts or
    ends with whitespace, and every gap but the last is whitespace, or empty after a Chinese or Japanese full stop,
    question or exclamation mark or comma."""

    leading: str
    pieces: list[str]
    gaps: list[str]


def _cut(text: str, gap: re.Pattern) -> tuple[list[str], list[str]]:
    pieces, gaps, start = [], [], 0
    for match in gap.finditer(text):
        space_start, space_end = match.span(match.lastindex or 0)
        pieces.append(text[start:space_start])
        gaps.append(text[space_start:space_end])
        start = space_end
    pieces.append(text[start:])
    gaps.append("")
    return pieces, gaps


def _pack(pieces: list[str], gaps: list[str], limit: int) -> tuple[list[str], list[str]]:
    """Neighbouring pieces joined (with their gap) while the result fits ``limit``."""
    packed, packed_gaps = [pieces[0]], [gaps[0]]
    for piece, gap in zip(pieces[1:], gaps[1:], strict=True):
        joined = packed[-1] + packed_gaps[-1] + piece
        if len(joined) <= limit:
            packed[-1], packed_gaps[-1] = joined, gap
        else:
            packed.append(piece)
            packed_gaps.append(gap)
    return packed, packed_gaps


def _split_to_fit(text: str, limit: int, gaps: tuple[re.Pattern, ...]) -> tuple[list[str], list[str]]:
    if len(text) <= limit or not gaps:
        return [text], [""]
    pieces, between = _cut(text, gaps[0])
    if gaps[0] is _CLAUSE_GAP:  # clauses that fit together stay together; a finer cut only for one still too long
        pieces, between = _pack(pieces, between, limit)
    out_pieces: list[str] = []
    out_gaps: list[str] = []
    for piece, gap in zip(pieces, between, strict=True):
        finer_pieces, finer_gaps = _split_to_fit(piece, limit, gaps[1:])
        finer_gaps[-1] = gap
        out_pieces += finer_pieces
        out_gaps += finer_gaps
    if gaps[0] is _WORD_GAP:
        return _pack(out_pieces, out_gaps, limit)
    return out_pieces, out_gaps


def split_text(text: str, limit: int) -> SplitText:
    """``text`` in pieces of at most ``limit`` characters where possible: one sentence per piece when the text is
    longer than ``limit``; a longer sentence at clause punctuation, then between words (a single word longer than
    ``limit`` stays whole). A text that fits is one piece."""
    if limit < 1:
        raise ValueError(f"limit must be a positive number of characters, got {limit}")
    body = text.lstrip()
    leading = text[: len(text) - len(body)]
    stripped = body.rstrip()
    trailing = body[len(stripped) :]
    if not stripped:
        return SplitText(leading, [stripped], [trailing])
    pieces, gaps = _split_to_fit(stripped, limit, (_SENTENCE_GAP, _CLAUSE_GAP, _WORD_GAP))
    gaps[-1] = trailing
    return SplitText(leading, pieces, gaps)


def join_pieces(split: SplitText, pieces: list[str]) -> str:
    """The text with each piece replaced by ``pieces[i]`` (the corrected pieces), whitespace as it was."""
    if len(pieces) != len(split.pieces):
        raise ValueError(f"expected {len(split.pieces)} pieces, got {len(pieces)}")
    return split.leading + "".join(piece + gap for piece, gap in zip(pieces, split.gaps, strict=True))


@dataclass(frozen=True)
class PiecedTexts:
    """Texts, each over ``limit`` characters cut by ``split_text`` and the rest whole, as one flat list of pieces
    to decode; ``owners[i]`` is the index of the text piece ``i`` came from."""

    splits: list[SplitText | None]
    pieces: list[str]
    owners: list[int]

    @classmethod
    def of(cls, texts: list[str], limit: int | None) -> PiecedTexts:
        # only the texts over the limit are cut (none without one): a text's result never depends on the others
        splits = [split_text(text, limit) if limit is not None and len(text) > limit else None for text in texts]
        pieces, owners = [], []
        for index, (text, split) in enumerate(zip(texts, splits, strict=True)):
            parts = split.pieces if split else [text]
            pieces += parts
            owners += [index] * len(parts)
        return cls(splits, pieces, owners)

    def join(self, decoded: list[str]) -> list[str]:
        """One text per input text from the decoded pieces (in ``pieces`` order)."""
        if len(decoded) != len(self.pieces):
            raise ValueError(f"expected {len(self.pieces)} decoded pieces, got {len(decoded)}")
        parts = iter(decoded)
        return [join_pieces(cut, [next(parts) for _ in cut.pieces]) if cut else next(parts) for cut in self.splits]
