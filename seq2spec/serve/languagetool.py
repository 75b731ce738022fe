"""LanguageTool's HTTP API (``/v2/check``, ``/v2/languages``) over the speller's corrections.

Editor plug-ins, browser extensions and ``language-tool-python`` send text and receive *matches*: a span of the text
(offset and length in UTF-16 code units, as LanguageTool's Java server counts them), the replacements, a message and
the rule. The speller corrects a line at a time and returns the line rewritten; here each line's changes are found
by aligning its words with the corrected line's, and each changed run becomes one match whose first replacement
turns the text into exactly the speller's output.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# LanguageTool's names and regional codes for the languages a speller may correct; another code is listed as itself
LANGUAGE_VARIANTS = {
    "en": ("English", {"US": "US", "GB": "GB", "AU": "Australian", "CA": "Canadian", "NZ": "New Zealand",
                       "ZA": "South African"}),
    "de": ("German", {"DE": "Germany", "AT": "Austria", "CH": "Swiss"}),
    "fr": ("French", {"FR": "France", "BE": "Belgium", "CA": "Canada", "CH": "Switzerland"}),
    "es": ("Spanish", {"ES": "Spain", "AR": "voseo", "MX": "Mexico"}),
    "pt": ("Portuguese", {"PT": "Portugal", "BR": "Brazil", "AO": "Angola", "MZ": "Mozambique"}),
    "it": ("Italian", {"IT": "Italy"}),
    "nl": ("Dutch", {"NL": "Netherlands", "BE": "Belgium"}),
    "pl": ("Polish", {"PL": "Poland"}),
    "ru": ("Russian", {"RU": "Russia"}),
    "uk": ("Ukrainian", {"UA": "Ukraine"}),
    "sv": ("Swedish", {"SE": "Sweden"}),
    "da": ("Danish", {"DK": "Denmark"}),
    "ca": ("Catalan", {"ES": "Spain"}),
}  # fmt: skip


def languages(codes: Sequence[str]) -> tuple[dict[str, str], ...]:
    """``/v2/languages``' entries for a speller that corrects ``codes`` (language codes such as en, de)."""
    entries = []
    for code in codes:
        name, regions = LANGUAGE_VARIANTS.get(code, (code, {}))
        entries.append({"name": name, "code": code, "longCode": code})
        entries += [{"name": f"{name} ({place})", "code": code, "longCode": f"{code}-{region}"}
                    for region, place in regions.items()]  # fmt: skip
    return tuple(entries)


LANGUAGES = languages(("en",))  # what the shipped speller checks: LanguageTool's codes for English
CONTEXT_CHARACTERS = 40  # of text either side of a match in its context, as LanguageTool gives
RULE = {
    "id": "SEQ2SPEC_SPELLER",
    "description": "Spelling and typing errors (seq2spec speller)",
    "issueType": "misspelling",
    "category": {"id": "TYPOS", "name": "Possible Typo"},
}
_TOKENS = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


class RequestError(ValueError):
    """A request the API refuses: ``status`` and a message naming the problem."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def check_language(language: str | None, listed: Sequence[dict[str, str]] = LANGUAGES) -> str | None:
    """The language code of the request's language (``de`` for ``de-AT``), one of the ``listed`` languages this
    server checks, or None for ``auto``; ``RequestError`` (400) naming it otherwise."""
    if not language:
        raise RequestError(400, "missing the 'language' parameter (for example en-US, or auto)")
    if language.lower() == "auto":
        return None
    entry = next((entry for entry in listed if entry["longCode"].lower() == language.lower()), None)
    if entry is None:
        codes = ", ".join([*dict.fromkeys(entry["longCode"] for entry in listed), "auto"])
        raise RequestError(400, f"language {language!r} is not checked here: use {codes}")
    return entry["code"]


def text_of(form: dict[str, Any]) -> str:
    """The text to check: ``text``, or the text parts of ``data``'s annotation (markup is left as it is)."""
    import json

    if form.get("text") is not None:
        return str(form["text"])
    if form.get("data") is None:
        raise RequestError(400, "missing the 'text' or 'data' parameter")
    try:
        annotation = json.loads(form["data"])["annotation"]
        return "".join(part.get("text", part.get("markup", "")) for part in annotation)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise RequestError(400, f"'data' is not LanguageTool's annotation JSON ({error})") from None


def lines_with_offsets(text: str) -> list[tuple[int, str]]:
    """Each line of ``text`` without its line break, with where it starts (code points)."""
    lines, at = [], 0
    for match in _LINES.finditer(text):
        whole = match.group(0)
        if not whole and match.start() == len(text) and lines:
            break
        line = whole.rstrip("\r\n")
        lines.append((at, line))
        at += len(whole)
        if at >= len(text):
            break
    return lines


@dataclass(frozen=True)
class Change:
    """One changed run of a line: ``start:end`` (code points in the whole text) becomes ``replacement``."""

    start: int
    end: int
    replacement: str


def changes(line: str, corrected: str, offset: int = 0) -> list[Change]:
    """The runs of ``line`` the speller changed, aligned word by word; applying them all gives ``corrected``. A
    change at a word's edge that only inserts (a comma) takes the word before it in, so no match is empty; changes
    that then share a word are joined into one."""
    before, after = _TOKENS.findall(line), _TOKENS.findall(corrected)
    starts = [0]
    for token in before:
        starts.append(starts[-1] + len(token))
    spans: list[tuple[int, int, int, int]] = []  # token ranges: before[a1:a2] becomes after[b1:b2]
    for tag, a1, a2, b1, b2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if a1 == a2:  # an insertion: the equal token before it (or after it, at the start) joins its span
            if a1 > 0:
                a1, b1 = a1 - 1, b1 - 1
            elif a2 < len(before):
                a2, b2 = a2 + 1, b2 + 1
        if spans and a1 < spans[-1][1]:  # it shares a token with the change before it
            first_a, last_a, first_b, last_b = spans[-1]
            spans[-1] = (first_a, max(last_a, a2), first_b, max(last_b, b2))
        else:
            spans.append((a1, a2, b1, b2))
    return [Change(offset + starts[a1], offset + starts[a2], "".join(after[b1:b2])) for a1, a2, b1, b2 in spans]


def utf16_offsets(text: str) -> list[int]:
    """For each code point position of ``text`` (and its end), the position in UTF-16 code units."""
    positions, at = [0], 0
    for character in text:
        at += 2 if ord(character) > 0xFFFF else 1
        positions.append(at)
    return positions


def match_json(text: str, change: Change, utf16: list[int], sentence: str) -> dict[str, Any]:
    """LanguageTool's JSON for one change (offsets and lengths in UTF-16 units)."""
    left = max(0, change.start - CONTEXT_CHARACTERS)
    right = min(len(text), change.end + CONTEXT_CHARACTERS)
    context = text[left:right]
    original = text[change.start : change.end]
    return {
        "message": f"Possible spelling mistake: {original!r} -> {change.replacement!r}",
        "shortMessage": "Spelling mistake",
        "replacements": [{"value": change.replacement}],
        "offset": utf16[change.start],
        "length": utf16[change.end] - utf16[change.start],
        "context": {
            "text": context,
            "offset": utf16[change.start] - utf16[left],
            "length": utf16[change.end] - utf16[change.start],
        },
        "sentence": sentence,
        "type": {"typeName": "Other"},
        "rule": RULE,
        "ignoreForIncompleteSentence": False,
        "contextForSureMatch": 0,
    }


def check_response(
    text: str,
    corrected_lines: list[str],
    language: str,
    version: str,
    listed: Sequence[dict[str, str]] = LANGUAGES,
) -> dict[str, Any]:
    """``/v2/check``'s answer: the matches that turn ``text`` into the corrected lines; ``language`` as the request
    named it (``auto``: the first ``listed`` language's first regional code is reported)."""
    utf16 = utf16_offsets(text)
    matches = []
    for (start, line), corrected in zip(lines_with_offsets(text), corrected_lines, strict=True):
        for change in changes(line, corrected, start):
            matches.append(match_json(text, change, utf16, line))
    if language == "auto":
        language = next((e["longCode"] for e in listed if e["longCode"] != e["code"]), listed[0]["longCode"])
    entry = next((e for e in listed if e["longCode"].lower() == language.lower()), listed[0])
    name = entry["name"]
    detected = {"name": name, "code": language, "confidence": 1.0, "source": "seq2spec"}
    return {
        "software": {
            "name": "seq2spec",
            "version": version,
            "buildDate": None,
            "apiVersion": 1,
            "premium": False,
            "status": "",
        },
        "warnings": {"incompleteResults": False},
        "language": {"name": name, "code": language, "detectedLanguage": detected},
        "matches": matches,
    }
