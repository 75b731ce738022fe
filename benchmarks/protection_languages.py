"""What protection lets a corrector of another language correct: words read otherwise than written, words kept.

A user's corrector of German, French, Russian, ... (here a byte-level tokenizer, ByT5's, which writes every
character) reads its texts through ``correct``'s protection. For sentences of the translated manual pages of Debian
(``recipes/multilingual_speech.py``'s training sentences, not its held-out ones), a letter dropped from one word in
five, this counts the words the model reads otherwise than written and the words kept from it, under three settings:
``language="en"`` (the English rules for every text), the default (``None``: each text told apart) and the
sentence's own language.

    python benchmarks/protection_languages.py --languages de fr es it pt nl pl sv ru uk

Writes ``results/protection_languages.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "recipes"))

from transformers import ByT5Tokenizer  # noqa: E402

from seq2spec.spelling.pipeline import protection_rules  # noqa: E402
from seq2spec.spelling.protection import Kind, Layout, TokenizerWriting  # noqa: E402
from seq2spec.spelling.settings import SpellingSettings  # noqa: E402

TYPO_SHARE = 0.2
HELD_OUT_PERCENT = 10  # multilingual_speech.py's held-out share, left out here


def with_typos(sentence: str, rng: random.Random) -> str:
    """One letter dropped from about one word in five (words of four letters or more)."""
    words = []
    for word in sentence.split():
        if len(word) > 3 and rng.random() < TYPO_SHARE:
            at = rng.randrange(1, len(word) - 1)
            word = word[:at] + word[at + 1 :]
        words.append(word)
    return " ".join(words)


def counts(texts: list[str], settings: SpellingSettings, writing: TokenizerWriting) -> dict[str, float]:
    rules_for = protection_rules(settings)
    words = read_otherwise = kept = 0
    for text in texts:
        for word in Layout.of(text, writing, rules=rules_for(text)).words:
            words += 1
            read_otherwise += word.reads != word.text
            kept += word.kind is Kind.KEPT
    return {"words": words, "read_otherwise": read_otherwise / words, "kept": kept / words}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", nargs="+", default=["de", "fr", "es", "it", "pt", "nl", "pl", "sv", "ru", "uk"])
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    from multilingual_speech import split_sentences

    writing = TokenizerWriting(ByT5Tokenizer())
    rows = []
    for code in args.languages:
        training, _ = split_sentences(code, HELD_OUT_PERCENT)
        sample = random.Random(1).sample(training, min(args.sentences, len(training)))
        rng = random.Random(0)
        texts = [with_typos(sentence, rng) for sentence in sample]
        row = {"language": code, "sentences": len(texts)}
        for name, language in (("en", "en"), ("auto", None), ("own", code)):
            row[name] = counts(texts, SpellingSettings(language=language), writing)
        rows.append(row)
        print(row, flush=True)
    table = [
        "Words of sentences with typos (ByT5's tokenizer): the share the model reads otherwise than written / the "
        'share kept from it, with `language="en"`, the default (auto) and the sentence\'s own language',
        "",
        "| language | sentences | words | en: read otherwise | en: kept | auto: read otherwise | auto: kept | "
        "own: read otherwise | own: kept |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        cells = [f"{row[name]['read_otherwise']:.3f} | {row[name]['kept']:.3f}" for name in ("en", "auto", "own")]
        table.append(f"| {row['language']} | {row['sentences']} | {row['en']['words']} | {' | '.join(cells)} |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "protection_languages.json").write_text(json.dumps(rows, indent=2) + "\n")
    (args.out / "protection_languages.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
