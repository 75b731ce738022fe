"""Markdown emphasis and links, wiki emphasis and inline HTML around words, which the model reads without."""

from __future__ import annotations

import re
from dataclasses import dataclass

from seq2spec.spelling.protection.phrases import MAX_QUOTATION_WORDS

# Markdown emphasis and links, wiki emphasis and inline HTML around a word: ``**bold**``, ``~~gone~~``, ``[the
# docs](url)``, ``'''bold'''`` (the speller wrote ``''bold''``), ``<b>here</b>`` (a word in them was kept whole, its
# typos unfixed, and the model read ``bhere/b``); underscores (``__init__``, ``_private``) and brackets that are no link
# (``[sic]``, ``[x]``) are left alone
_INLINE_TAGS = "b|i|u|s|em|strong|mark|del|ins|small|p|li|h[1-6]|td|th|dt|dd|span|blockquote|cite|q"
_MARKUP_OPENS = re.compile(
    rf"^((?:[(\"\u2018\u201c]|'(?!'))*)((?:\*{{1,3}}|~~|'{{2,5}}|\[|<(?:{_INLINE_TAGS})>)+)(?=[^\W\d_])"
)
_MARKUP_CLOSES = re.compile(
    rf"(?<=[\w.,;:!?'\u2019])((?:\*{{1,3}}|~~|'{{2,5}}|\](?:\([^\s()]*\)|\[[^\s\]]*\])|</(?:{_INLINE_TAGS})>)+)"
    r"([.,;:!?)\"'\u2019\u201d]*)$"
)


@dataclass(frozen=True)
class Markup:
    """Markup ``opening`` at ``start`` and ``closing`` at ``end`` of the word the model reads (its characters
    ``[start:end]`` inside the markup, punctuation outside it)."""

    opening: str
    closing: str
    start: int
    end: int

    def around(self, read: str, output: str) -> str:
        """``output`` (the model's word for ``read``) with the markup put back: where the punctuation outside it
        came back unchanged, exactly around the same characters; else around the output's word and the
        punctuation next to it."""
        head, tail = read[: self.start], read[self.end :]
        if not (output.startswith(head) and output.endswith(tail) and len(output) >= len(head) + len(tail)):
            head = re.match(r"^[(\"'\u2018\u201c]*", output).group()
            tail = re.search(r"[.,;:!?)\"'\u2019\u201d]*$", output[len(head) :]).group()
        middle = output[len(head) : len(output) - len(tail)]
        return head + self.opening + middle + self.closing + tail


def _markup_closes(opening: str, closing: str) -> bool:
    """Whether ``closing`` ends what ``opening`` began: the same emphasis marks reversed, ``]`` for ``[``, the
    closing tag."""
    if opening.startswith("["):
        return closing.startswith("]")
    if opening.startswith("<"):
        return closing == opening.replace("<", "</", 1)
    return closing == opening[::-1]


def markup_spans(words: list[str]) -> dict[int, tuple[str, Markup]]:
    """Index of ``words`` (whitespace-free) -> (the word without its markup, the markup), for the words that open
    and close a span of Markdown emphasis, a Markdown link's text or an inline HTML tag (``**very importnat**``,
    ``[teh docs](url)``, ``<b>here</b>``, ``<p>Teh text.</p>``), matched as pairs within ``MAX_QUOTATION_WORDS``
    words, a span inside another too; an opening no later word closes (``*args``) is no markup."""
    found: dict[int, tuple[str, Markup]] = {}
    index = 0
    while index < len(words):
        if index in found:  # the closing word of a span that holds another (``<p>The <b>qiuck</b> fox.</p>``)
            index += 1
            continue
        opens = _MARKUP_OPENS.match(words[index])
        closed = None
        for end in range(index, min(len(words), index + MAX_QUOTATION_WORDS)) if opens else ():
            word = words[end][opens.end() :] if end == index else words[end]
            closes = _MARKUP_CLOSES.search(word)
            if closes is not None and _markup_closes(opens.group(2), closes.group(1)):
                closed = end, word, closes
                break
        if closed is None:
            index += 1
            continue
        end, word, closes = closed
        lead, opening = opens.group(1), opens.group(2)
        inner, closing, trail = word[: closes.start()], closes.group(1), closes.group(2)
        if end == index:
            found[index] = (lead + inner + trail, Markup(opening, closing, len(lead), len(lead) + len(inner)))
        else:
            rest = words[index][opens.end() :]
            found[index] = (lead + rest, Markup(opening, "", len(lead), len(lead) + len(rest)))
            found[end] = (inner + trail, Markup("", closing, 0, len(inner)))
        index += 1
    return found
