"""recipes/language_vocabularies.py: each language's own tokens by their share of its text, and the sentences of
translation catalogues it counts them in."""

from __future__ import annotations

import struct

import language_vocabularies as vocabularies
import multilingual_speech as speech
import pytest


class _Tokens:
    """A tokenizer of single-character tokens: a character's code point is its id; ``~`` ends the text."""

    def convert_tokens_to_ids(self, token: str) -> int:
        return ord("~")

    def __call__(self, texts: list[str], add_special_tokens: bool = False):
        class Encoded:
            input_ids = [[ord(c) for c in text] for text in texts]

        return Encoded()


@pytest.mark.parametrize(("coverage", "expected"), [(0.5, "a"), (0.75, "a "), (1.0, "a bc")])
def test_a_languages_tokens_are_its_most_frequent_up_to_the_coverage(coverage, expected):
    # read after a space: " aaaa", " aab", " c": a 6, ' ' 3, b 1, c 1 of 11
    tokens, occurrences = vocabularies.own_tokens(["aaaa", "aab", "c"], _Tokens(), coverage)
    assert occurrences == 11
    assert "".join(chr(t) for t in tokens[:2]) == expected[:2] and {chr(t) for t in tokens} == set(expected)


def _write_catalogue(path, messages: dict[str, str]) -> None:
    """A GNU gettext catalogue (.mo) holding ``messages`` (msgid -> msgstr), its header first."""
    entries = sorted({"": "Content-Type: text/plain; charset=UTF-8\n", **messages}.items())
    ids = [key.encode() for key, _ in entries]
    strs = [value.encode() for _, value in entries]
    start = 28 + 16 * len(entries)
    data, id_table, str_table = b"", [], []
    for table, items in ((id_table, ids), (str_table, strs)):
        for item in items:
            table.append((len(item), start + len(data)))
            data += item + b"\0"
    header = struct.pack("<7I", 0x950412DE, 0, len(entries), 28, 28 + 8 * len(entries), 0, 0)
    tables = b"".join(struct.pack("<2I", *pair) for pair in id_table + str_table)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + tables + data)


def test_catalogue_sentences_keep_the_languages_script_without_placeholders(tmp_path, monkeypatch):
    monkeypatch.setattr(speech, "LOCALE", tmp_path)
    greek = "Το αρχείο %s δεν βρέθηκε στον κατάλογο."
    _write_catalogue(
        tmp_path / "el" / "LC_MESSAGES" / "app.mo",
        {
            "File not found": greek,
            "_Open": "_Άνοιγμα αρχείου",
            "Untranslated": "Save the file now",  # English left in the catalogue
            "Markup": "<b>Προσοχή</b> {count} αρχεία",
        },
    )
    _write_catalogue(tmp_path / "el_GR" / "LC_MESSAGES" / "other.mo", {"x": "Ένα δεύτερο μήνυμα εδώ."})
    _write_catalogue(tmp_path / "eu" / "LC_MESSAGES" / "app.mo", {"x": "Beste hizkuntza bat da hau."})  # not el
    sentences = vocabularies.catalogue_sentences("el")
    assert "Το αρχείο δεν βρέθηκε στον κατάλογο." in sentences
    assert "Άνοιγμα αρχείου" in sentences and "Ένα δεύτερο μήνυμα εδώ." in sentences
    assert "Προσοχή αρχεία" in sentences
    assert not any("Save" in s or "hizkuntza" in s or "%" in s for s in sentences)
    held = [s for s in sentences if speech.held_out(s, vocabularies.HELD_OUT_PERCENT)]
    assert not held
    assert vocabularies.catalogue_sentences("ko") == []
