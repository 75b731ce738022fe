"""Each language's own tokens for a Whisper draft that scores a slice of the vocabulary.

The multilingual draft scores 24,576 of base's 51,865 tokens: the English draft's and the most frequent of its 14
training languages. In a language whose tokens the slice lacks (Korean: 13% of the tokens of its held-out
sentences are in it, Chinese 63%) the draft can never propose most of base's tokens. This recipe counts base's
tokens in each language's text and writes, per language, the tokens that cover ``--coverage`` of its token
occurrences and are not in the slice; seq2spec adds them to the slice for a batch whose rows transcribe that
language (``seq2spec.whisper.draft``, ``LANGUAGE_TOKENS_FILE``).

Text: for the languages ``multilingual_speech.py`` speaks, its training sentences (the held-out ones, which the
benches read, are never counted); for every other language Whisper knows, the translation catalogues
(/usr/share/locale/<language>*/LC_MESSAGES/*.mo) of the installed packages, cut into sentences the same way, kept
where most letters are in the script most of that language's letters are in, printf placeholders and markup removed,
and the sentences that ``multilingual_speech.py``'s content hash holds out dropped too.

``python recipes/language_vocabularies.py --draft seq2spec/assets/whisper_base_multilingual_draft`` writes
``language_tokens.safetensors`` there and prints each language's sentences, tokens and coverage.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import multilingual_speech as speech  # noqa: E402

from seq2spec.whisper.draft import LANGUAGE_TOKENS_FILE, OUTPUT_TOKENS_KEY, WEIGHTS_FILE  # noqa: E402

HELD_OUT_PERCENT = 8  # multilingual_speech.py's default
_PLACEHOLDER = re.compile(
    r"%(\d+\$)?[-+ #0]*\d*(\.\d+)?[hlLqjzt]*[diouxXeEfgGcsSp%]"  # printf
    r"|\{[^}]*\}|<[^>]*>|&\w+;|\$\{?\w+\}?"  # braces, markup, entities, variables
)


def script_of(letter: str) -> str:
    """The first word of a letter's Unicode name (LATIN, CYRILLIC, CJK, HANGUL, ...)."""
    return unicodedata.name(letter, "?").split(" ")[0]


def catalogue_sentences(code: str) -> list[str]:
    """Sentences of the translation catalogues of ``code`` (every folder ``code``, ``code_*``, ``code@*``) written
    mostly in the script most of their letters are in, held-out ones (by ``multilingual_speech``'s hash) left out."""
    folders = [
        folder
        for folder in sorted(speech.LOCALE.glob(f"{code}*"))
        if folder.name == code or folder.name.startswith((f"{code}_", f"{code}@"))
    ]
    pieces: list[str] = []
    for folder in folders:
        for catalogue in sorted((folder / "LC_MESSAGES").glob("*.mo")):
            for text in speech.catalogue_strings(catalogue):
                text = _PLACEHOLDER.sub(" ", text).replace("_", "").replace("&", "")
                for paragraph in text.split("\n"):
                    pieces += [re.sub(r"\s+", " ", p).strip() for p in speech._SENTENCE_END.split(paragraph)]
    pieces = sorted({p for p in pieces if sum(c.isalpha() for c in p) >= 4})
    scripts = Counter(script_of(c) for p in pieces for c in p if c.isalpha())
    if not scripts:
        return []
    main = scripts.most_common(1)[0][0]
    kept = []
    for piece in pieces:
        letters = [c for c in piece if c.isalpha()]
        if sum(script_of(c) == main for c in letters) >= 0.8 * len(letters) and not speech.held_out(
            piece, HELD_OUT_PERCENT
        ):
            kept.append(piece)
    return kept


def training_text(code: str) -> tuple[str, list[str]]:
    """Where a language's text comes from, and its sentences (never the held-out ones)."""
    if code in speech.LANGUAGES:
        return "multilingual_speech.py training sentences", speech.split_sentences(code, HELD_OUT_PERCENT)[0]
    return "translation catalogues", catalogue_sentences(code)


def own_tokens(sentences: list[str], tokenizer, coverage: float) -> tuple[list[int], int]:
    """The most frequent text tokens of ``sentences`` (each read after a space, as a transcript's words are) that
    together make ``coverage`` of their occurrences; and how many occurrences there were."""
    end_of_text = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    counts: Counter[int] = Counter()
    for ids in tokenizer([" " + s for s in sentences], add_special_tokens=False).input_ids:
        counts.update(t for t in ids if t < end_of_text)
    total = sum(counts.values())
    chosen, covered = [], 0
    for token, count in counts.most_common():
        if covered >= coverage * total:
            break
        chosen.append(token)
        covered += count
    return chosen, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft", type=Path, required=True, help="a saved Whisper draft with a vocabulary slice")
    parser.add_argument("--coverage", type=float, default=0.995, help="share of a language's token occurrences")
    parser.add_argument("--min-sentences", type=int, default=200, help="fewer: the language gets no list")
    parser.add_argument("--languages", nargs="*", help="Whisper language codes (default: every one but English)")
    args = parser.parse_args()

    import torch
    from safetensors.torch import load_file, save_file
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    from seq2spec.default_models import load_whisper_base

    _, processor = load_whisper_base()
    tokenizer = processor.tokenizer
    stored = load_file(args.draft / WEIGHTS_FILE)
    if OUTPUT_TOKENS_KEY not in stored:
        raise SystemExit(f"{args.draft} scores the whole vocabulary already: nothing to add")
    scored = set(stored[OUTPUT_TOKENS_KEY].tolist())
    tensors, report = {}, {}
    for code in args.languages or [code for code in LANGUAGES if code != "en"]:
        source, sentences = training_text(code)
        if len(sentences) < args.min_sentences:
            print(f"{code}: {len(sentences)} sentences, no list", flush=True)
            continue
        tokens, occurrences = own_tokens(sentences, tokenizer, args.coverage)
        extra = sorted(set(tokens) - scored)
        widened = scored | set(extra)
        sample = [t for ids in tokenizer([" " + s for s in sentences], add_special_tokens=False).input_ids for t in ids]
        before = sum(t in scored for t in sample) / len(sample)
        after = sum(t in widened for t in sample) / len(sample)
        report[code] = {
            "source": source,
            "sentences": len(sentences),
            "token_occurrences": occurrences,
            "own_tokens": len(tokens),
            "added": len(extra),
            "slice_coverage": round(before, 4),
            "coverage_with_added": round(after, 4),
        }
        print(f"{code}: {json.dumps(report[code])}", flush=True)
        if extra:
            tensors[code] = torch.tensor(extra, dtype=torch.int32)
    metadata = {"coverage": str(args.coverage), "held_out_percent": str(HELD_OUT_PERCENT)}
    save_file(tensors, args.draft / LANGUAGE_TOKENS_FILE, metadata=metadata)
    (args.draft / "language_tokens.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(tensors)} languages, {sum(t.numel() for t in tensors.values())} tokens -> {args.draft}")


if __name__ == "__main__":
    main()
