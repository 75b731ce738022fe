"""Which texts a tokenizer writes back as they were, and the typographic characters a tokenizer may lack."""

from __future__ import annotations

import re
import unicodedata

# typographic characters and the plain forms a tokenizer without them can write
TYPOGRAPHIC = {
    "\u2018": "'",  # ‘
    "\u2019": "'",  # ’
    "\u2032": "'",  # ′
    "\u201c": '"',  # “
    "\u201d": '"',  # ”
    "\u201e": '"',  # „
    "\u00ab": '"',  # «
    "\u00bb": '"',  # »
    "\u2033": '"',  # ″
    "\u2010": "-",  # hyphen
    "\u2011": "-",  # non-breaking hyphen
    "\u2012": "-",  # figure dash
    "\u2013": "-",  # –
    "\u2014": "-",  # —
    "\u2212": "-",  # minus sign
    "\u2026": "...",  # …
}
CURLY_APOSTROPHE = "\u2019"
# an acute accent or a backtick written for the apostrophe of a contraction, on keyboards that put them near ("isn´t",
# "it`s", "we´re"): the speller wrote "is husband it?" for "isn`t it?" and "can`" for "can`t"; the model reads "isn't"
# and the word comes back with the writer's mark
APOSTROPHE_MARKS = {"`": "'", "\u00b4": "'"}
MARK_APOSTROPHE = re.compile(r"[^\W\d_][`\u00b4](?:s|t|re|ve|ll|d|m)[.,;:!?)\"']*$", re.IGNORECASE)


class TokenizerWriting:
    """Which text a tokenizer writes back as it was (``decode(encode(text)) == text``) with no character its
    vocabulary holds only alone (``barely_written``), remembered per text."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.barely_written = barely_written(tokenizer)
        self._writes: dict[str, bool] = {}

    def writes(self, text: str) -> bool:
        if text not in self._writes:
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            round_trip = self.tokenizer.decode(ids) == text
            self._writes[text] = round_trip and not any(c in self.barely_written for c in text)
        return self._writes[text]

    def stand_in(self, word: str) -> str:
        """What the tokenizer can write of ``word``: writable characters as they are, typographic ones in their plain
        form, accented letters without their accents, the rest left out."""
        parts = []
        for character in word:
            if self.writes(character):
                parts.append(character)
            elif character in TYPOGRAPHIC and self.writes(TYPOGRAPHIC[character]):
                parts.append(TYPOGRAPHIC[character])
            elif unicodedata.category(character).startswith("L"):
                base = "".join(c for c in unicodedata.normalize("NFKD", character) if not unicodedata.combining(c))
                if base and base != character and self.writes(base):
                    parts.append(base)
        return "".join(parts)


def barely_written(tokenizer) -> frozenset[str]:
    """The non-ASCII characters a vocabulary of characters (sentencepiece, WordPiece) holds as pieces of their own
    but inside no longer piece: the model met them too rarely to learn any word with them (the shipped speller's
    2,048 pieces have one, ``í``). Byte-level vocabularies hold no such characters: ByT5's lists a byte as the
    Latin-1 character of its value (``é`` for 0xE9), but writes ``é`` as its two UTF-8 bytes, never as that piece."""
    try:
        vocabulary = tokenizer.get_vocab()
    except (AttributeError, NotImplementedError, TypeError):
        return frozenset()
    pieces = [piece.lstrip("\u2581") for piece in vocabulary]
    alone = {piece for piece in pieces if len(piece) == 1 and not piece.isascii()}
    inside = {character for piece in pieces if len(piece) > 1 for character in piece if character in alone}
    return frozenset(character for character in alone - inside if _written_as_own_piece(tokenizer, character))


def _written_as_own_piece(tokenizer, character: str) -> bool:
    """Whether ``tokenizer`` writes ``character`` with its own piece (not as bytes or other pieces)."""
    try:
        ids = tokenizer(character, add_special_tokens=False)["input_ids"]
    except (TypeError, ValueError):
        return True
    pieces = (tokenizer.convert_ids_to_tokens(i) for i in ids if i != tokenizer.unk_token_id)
    return [piece for piece in (piece.lstrip("\u2581") for piece in pieces) if piece] == [character]
