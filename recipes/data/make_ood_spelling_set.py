"""Builds ``data/spelling_heldout_ood.tsv``: an out-of-domain held-out set for the speller (columns source,
reference), from English prose the training text never touches.

Text: the prose paragraphs of three Debian documentation packages (bookworm; English HTML only), kept out of
training:

- ``debian-handbook`` 11.20220922 (The Debian Administrator's Handbook; GPL-2+ or CC BY-SA 3.0):
  ``/usr/share/doc/debian-handbook/html/en-US/*.html``
- ``debian-reference-en`` 2.100 (Debian Reference, Osamu Aoki; GPL-2+):
  ``/usr/share/doc/debian-reference-en/docs/*.en.html``
- ``developers-reference`` 12.18 (Debian Developer's Reference; GPL-2+):
  ``/usr/share/doc/developers-reference/docs/*.html``

``EXCLUDED_SOURCES`` lists them for a training-data builder, which must skip these packages (and any sentence of
the set). Not used: WordNet and fortunes (the training text) and Python's own docstrings and source (reserved for
external checks).

Sentences: the text of ``<p>`` and ``<div class="para">`` elements (never ``<pre>``, tables or lists), split at
sentence ends, 5-30 words and at most 200 characters, starting with a capital letter and ending with . ! or ?,
typographic punctuation turned into ASCII; dropped: sentences with double quotes, inline code other than a single
lower-case word (a command or package name such as ``gzip`` stays), URLs, e-mail addresses, paths, options, markup
or code characters, dotted names, man page section references, more than two numbers, mostly upper-case words, and
words codespell lists as misspellings (the text's own typos would make wrong references).
Deduplicated, shuffled with ``--seed``; the first ``--clean-share`` of the rows stay clean (source == reference),
the others get 1-3 typos (1: 50%, 2: 35%, 3: 15%) from ``noise.HumanNoise`` with codespell's misspellings; the
rows are then shuffled again. The same packages, codespell version and seed give the same file.

    apt-get install debian-handbook debian-reference-en developers-reference && pip install codespell
    python recipes/data/make_ood_spelling_set.py [--rows 1000] [--clean-share 0.4] [--seed 23] [--out PATH]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the recipes
from metrics import word_edits  # noqa: E402
from noise import HumanNoise, split_token  # noqa: E402
from speller_data import load_typos  # noqa: E402

# (Debian package, files read, licence): kept out of any training text
EXCLUDED_SOURCES: tuple[tuple[str, str, str], ...] = (
    ("debian-handbook", "/usr/share/doc/debian-handbook/html/en-US/*.html", "GPL-2+ or CC-BY-SA-3.0"),
    ("debian-reference-en", "/usr/share/doc/debian-reference-en/docs/*.en.html", "GPL-2+"),
    ("developers-reference", "/usr/share/doc/developers-reference/docs/*.html", "GPL-2+"),
)
INSTALL_HINT = "apt-get install debian-handbook debian-reference-en developers-reference"
DEFAULT_OUT = Path(__file__).resolve().parent / "spelling_heldout_ood.tsv"

_BLOCK = {"pre", "table", "ul", "ol", "dl", "div", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "br"}
_CODE_TAGS = {"code", "tt", "kbd", "samp", "var"}
_CODE_CLASSES = {
    "command",
    "filename",
    "literal",
    "replaceable",
    "option",
    "parameter",
    "systemitem",
    "userinput",
    "computeroutput",
    "varname",
    "envar",
    "function",
    "pre",
    "pkg",
    "email",
    "uri",
    "keycap",
}
_CUT = "\x00"  # marks code or a block inside a paragraph: a sentence holding it is dropped
_VOID = {"br", "img", "hr", "meta", "link", "input", "wbr"}


class _Paragraphs(HTMLParser):
    """The text of each prose paragraph; inline code that is not one lower-case word becomes ``_CUT``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, opens a paragraph, is code)
        self.text: list[str] | None = None
        self.code: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            if self.text is not None:
                self.text.append(" ")
            return
        classes = set((dict(attrs).get("class") or "").split())
        opens = self.text is None and (tag == "p" or (tag == "div" and "para" in classes))
        is_code = self.text is not None and self.code is None and (tag in _CODE_TAGS or bool(classes & _CODE_CLASSES))
        if opens:
            self.text = []
        elif self.text is not None and tag in _BLOCK:
            self.text.append(_CUT)
        if is_code:
            self.code = []
        self.stack.append((tag, opens, is_code))

    def handle_endtag(self, tag):
        if tag in _VOID or not any(t == tag for t, _, _ in self.stack):
            return
        while self.stack:
            name, opens, is_code = self.stack.pop()
            if is_code and self.code is not None and self.text is not None:
                word = "".join(self.code).strip()
                self.text.append(word if re.fullmatch(r"[a-z]{2,}", word) else _CUT)
                self.code = None
            if opens and self.text is not None:
                self.paragraphs.append("".join(self.text))
                self.text = None
            if name == tag:
                break

    def handle_data(self, data):
        if self.code is not None:
            self.code.append(data)
        elif self.text is not None:
            self.text.append(data)


_ASCII = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u00a0": " ",
        "\u2026": "...",
    }
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')]?\s+(?=[\"'(]?[A-Z])")
_BAD = re.compile(
    r"https?:|www\.|://|@|/|\\|[<>{}\[\]|=#$`~^*;_+%&]|--|\.\.|\w\.\w|\(\d\w*\)|(^|\s)-\w|\b(e\.g|i\.e|etc|cf)\b",
    re.IGNORECASE,
)


def sentence_ok(sentence: str) -> bool:
    """Plain prose of 5-30 words: see the module's docstring."""
    words = sentence.split(" ")
    if not 5 <= len(words) <= 30 or len(sentence) > 200 or not re.fullmatch(r"[ -~]+", sentence):
        return False
    if not re.match(r"[A-Z]", sentence) or not re.search(r"[.!?][\"')]?$", sentence) or _BAD.search(sentence):
        return False
    if sentence.count("(") != sentence.count(")") or '"' in sentence:
        return False
    if sum(any(ch.isdigit() for ch in word) for word in words) > 2:
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    if letters < 0.75 * len(sentence.replace(" ", "")):
        return False
    upper = sum(1 for word in words if len(word) > 1 and word.strip(".,:;!?()\"'").isupper())
    return upper <= max(1, len(words) // 5)


def paragraph_sentences(paragraph: str) -> list[str]:
    sentences = []
    for segment in paragraph.translate(_ASCII).split(_CUT):
        flat = re.sub(r"\s+", " ", segment).strip()
        for piece in _SENTENCE_END.split(flat):
            piece = piece.strip()
            if piece and _CUT not in piece and sentence_ok(piece):
                sentences.append(piece)
    # a segment cut by code loses its neighbours' context only: the pieces left of and right of a cut are whole
    return sentences


def source_files() -> list[Path]:
    files = []
    for package, pattern, _ in EXCLUDED_SOURCES:
        directory, glob = pattern.rsplit("/", 1)
        found = sorted(Path(directory).glob(glob))
        if not found:
            raise SystemExit(f"no {pattern} ({package} is not installed); install the sources with: {INSTALL_HINT}")
        files.extend(found)
    return files


def manual_paragraphs() -> Iterator[str]:
    """The prose paragraphs of the installed manuals (inline code not one lower-case word is ``_CUT``)."""
    for path in source_files():
        parser = _Paragraphs()
        parser.feed(path.read_text(encoding="utf-8", errors="ignore"))
        parser.close()
        yield from parser.paragraphs


def load_sentences(misspellings: set[str] = frozenset()) -> list[str]:
    """Every sentence that passes the filters and holds none of ``misspellings`` (lower case), deduplicated, in a
    fixed order."""
    sentences = {sentence for paragraph in manual_paragraphs() for sentence in paragraph_sentences(paragraph)}
    return sorted(s for s in sentences if not misspellings & set(re.findall(r"[a-z]+", s.lower())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--clean-share", type=float, default=0.4)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    typos = load_typos()
    # the text's own misspellings (codespell's list) would be references that are wrong: such sentences are dropped
    pool = load_sentences({typo for typo_list in typos.values() for typo in typo_list})
    if len(pool) < args.rows:
        raise SystemExit(f"only {len(pool)} sentences found, {args.rows} asked for")
    rng = random.Random(args.seed)
    rng.shuffle(pool)
    chosen = pool[: args.rows]
    clean_rows = round(args.clean_share * args.rows)
    noise = HumanNoise(typos)
    rows, kinds, errors_per_row = [], Counter(), Counter()
    capitalised = 0
    for position, sentence in enumerate(chosen):
        if position < clean_rows:
            rows.append((sentence, sentence))
            continue
        errors = rng.choices((1, 2, 3), (0.5, 0.35, 0.15))[0]
        noisy, applied = noise(sentence, rng, errors)
        kinds.update(applied)
        errors_per_row[len(applied)] += 1
        capitalised += _capitalised_typos(noisy, sentence)
        rows.append((noisy, sentence))
    rng.shuffle(rows)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    # no field holds a tab, a newline or a double quote (the filters drop quotes): plain lines, no quoting
    args.out.write_text("source\treference\n" + "".join(f"{s}\t{r}\n" for s, r in rows), encoding="utf-8")
    total = sum(kinds.values())
    print(f"{len(pool)} sentences pass the filters; wrote {len(rows)} rows to {args.out}", file=sys.stderr)
    print(f"clean rows: {clean_rows}; rows with 1/2/3 typos: {dict(sorted(errors_per_row.items()))}", file=sys.stderr)
    print(f"{total} typos: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()), file=sys.stderr)
    print(f"typos in capitalised words: {capitalised} ({capitalised / max(1, total):.1%})", file=sys.stderr)
    return 0


def _capitalised_typos(noisy: str, clean: str) -> int:
    """Typos whose clean word starts with a capital letter (an estimate for the summary line)."""
    count = 0
    reference = clean.split()
    for i1, i2, _ in word_edits(clean, noisy):
        parts = split_token(reference[i1]) if i1 < i2 else None
        count += bool(parts and parts[1][:1].isupper())
    return count


if __name__ == "__main__":
    raise SystemExit(main())
