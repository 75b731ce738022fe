"""Speech in many languages made offline, for a multilingual Whisper draft: sentences, voices and clips.

Text: the translated manual pages under /usr/share/man/<language> and the translation catalogues
(/usr/share/locale/<language>/LC_MESSAGES/*.mo) of the installed Debian packages (``apt-get install manpages-fr
manpages-de manpages-es manpages-it manpages-pl manpages-ru manpages-ja manpages-zh`` adds more), cut into
sentences, kept only when written mostly in the language's script and free of markup, placeholders and command
lines. Sentences are split by content hash into training and held-out ones.

Voices: espeak-ng's voice for each language with its variants; three variants (``HELD_OUT_VARIANTS``) speak only
held-out clips, so held-out figures are of voices and sentences never trained on. espeak-ng cannot read kanji or
most hanzi (it names them "Chinese letter" in English): Japanese is read from its hiragana (pykakasi) and Chinese
from numbered-tone pinyin (pypinyin) by the ``cmn-latn-pinyin`` voice.

``python recipes/multilingual_speech.py --work-dir DIR`` writes DIR/manifest.jsonl and its WAV files in the form
``recipes/distill_whisper_draft.py`` reads (``--stage encode`` and on), each record with its ``language`` and
``task``: short clips (1-3 sentences) and long clips (one voice reading for 12-30 s, or cut at 30 s), a share of
the non-English ones labelled as ``translate`` (to English), English clips from the English draft's corpus and voices
beside them.
"""

from __future__ import annotations

import argparse
import gettext
import gzip
import hashlib
import json
import random
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import distill_whisper_draft as distill  # noqa: E402
from voices import Voice  # noqa: E402

MAN = Path("/usr/share/man")
LOCALE = Path("/usr/share/locale")


@dataclass(frozen=True)
class Language:
    code: str  # Whisper's language code
    espeak: tuple[str, ...]  # espeak-ng voices for it
    folders: tuple[str, ...]  # its folders under /usr/share/man and /usr/share/locale
    script: str  # the Unicode script most of its letters are written in (a word of unicodedata's names)
    markers: str = ""  # common words of its own, spaced: a Latin-script sentence needs one (not English text)
    reading: str = ""  # what espeak-ng is given instead of the script it cannot read: "kana" or "pinyin"


LANGUAGES = {
    language.code: language
    for language in (
        Language("fr", ("fr-fr", "fr-be"), ("fr",), "LATIN", "le la les des est une dans pour que qui avec pas"),
        Language("es", ("es", "es-419"), ("es",), "LATIN", "el la los las del que una por para con es se"),
        Language("de", ("de",), ("de",), "LATIN", "der die das und ist nicht mit den ein eine für wird"),
        Language("it", ("it",), ("it",), "LATIN", "il la che di per non una sono del della con gli"),
        Language("pt", ("pt-br", "pt"), ("pt", "pt_BR"), "LATIN", "o os que do da não uma para com em dos das"),
        Language("ru", ("ru",), ("ru",), "CYRILLIC"),
        Language("pl", ("pl",), ("pl",), "LATIN", "nie jest się na do że z w i jak dla"),
        Language("ja", ("ja",), ("ja",), "CJK", reading="kana"),
        Language("zh", ("cmn-latn-pinyin",), ("zh_CN",), "CJK", reading="pinyin"),
        Language("hi", ("hi",), ("hi",), "DEVANAGARI"),
        Language("nl", ("nl",), ("nl",), "LATIN", "de het een van en niet is dat met voor op te"),
        Language("tr", ("tr",), ("tr",), "LATIN", "bir ve bu için ile değil olarak da de çok olan"),
        Language("sv", ("sv",), ("sv",), "LATIN", "och att det som en är för med inte på av den"),
        Language("uk", ("uk",), ("uk",), "CYRILLIC"),
        # not among the shipped draft's languages: speech to measure the languages it never trained in
        Language("ca", ("ca",), ("ca",), "LATIN", "el la els les del que una per amb és no es"),
        Language("cs", ("cs",), ("cs",), "LATIN", "je se na že pro není jako nebo při být jsou"),
        Language("ko", ("ko",), ("ko",), "HANGUL"),
        Language("el", ("el",), ("el",), "GREEK"),
        Language("ar", ("ar",), ("ar",), "ARABIC"),
        Language("vi", ("vi",), ("vi",), "LATIN", "và của là có không những được trong một các cho này"),
        Language("fi", ("fi",), ("fi",), "LATIN", "ja on ei se että tai kun jos voi ole tämä sen"),
    )
}
# the languages the shipped multilingual draft trained in besides English (the --languages default)
DRAFT_LANGUAGES = ("fr", "es", "de", "it", "pt", "ru", "pl", "ja", "zh", "hi", "nl", "tr", "sv", "uk")
TRAINING_VARIANTS = ("", "+m1", "+m3", "+m5", "+f1", "+f2", "+f3", "+klatt", "+klatt2")
HELD_OUT_VARIANTS = ("+m7", "+f4", "+klatt4")
CJK_KANA = ("HIRAGANA", "KATAKANA")

_GROFF_ESCAPE = re.compile(r"\\f[BIRPC]|\\f\(..|\\f\[[^\]]*\]|\\\(..|\\\[[^\]]*\]|\\\*.|\\[&|^:%]|\\s[-+]?\d")
_MARKUP = re.compile(r"[<>{}\[\]\\/=_@#$|~`]|%\S|https?:|\.\w{1,4}\b|--|\w\(\d\)|(^|\s)-\w|\w\.\w")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def groff_text(path: Path) -> str:
    """The running text of a manual page (requests dropped, the font macros' words kept, escapes removed)."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    lines = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith((".", "'")):
            font = re.match(r"[.'](?:B|I|BI|IB|BR|RB|IR|RI|SM|SB)\s+(.*)", line)
            if font is None:
                lines.append("\n")  # a request ends a paragraph
                continue
            line = font.group(1).replace('"', "")
        lines.append(_GROFF_ESCAPE.sub("", line.replace("\\-", "-").replace("\\ ", " ").replace("\\e", "")))
    return " ".join(lines)


def catalogue_strings(path: Path) -> list[str]:
    """The translated strings of a gettext catalogue (.mo)."""
    try:
        with path.open("rb") as handle:
            catalogue = gettext.GNUTranslations(handle)._catalog  # noqa: SLF001 - the parsed table, read only
    except (OSError, UnicodeDecodeError, ValueError, LookupError, SyntaxError):  # unreadable, or a malformed header
        return []
    return [value for key, value in catalogue.items() if isinstance(value, str) and key]


def script_share(text: str, script: str) -> float:
    """Share of ``text``'s letters whose Unicode name starts with ``script`` (CJK: ideographs and kana)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    prefixes = (script, *CJK_KANA) if script == "CJK" else (script,)
    return sum(unicodedata.name(c, "").startswith(prefixes) for c in letters) / len(letters)


def clean(sentence: str, language: Language) -> str | None:
    """``sentence`` tidied, or None when it is not plain prose in ``language``'s script."""
    sentence = "".join(c for c in sentence if unicodedata.category(c) != "Cc" and c not in "&\u00ad")
    sentence = re.sub(r"\s+", " ", sentence).strip(" -*•:;,'\"")
    if _MARKUP.search(sentence) or any(c.isdigit() for c in sentence) or script_share(sentence, language.script) < 0.9:
        return None
    if language.script == "CJK":  # brackets, quotes and signs are read out by name, or break the reading
        plain = not any(c in "()（）%％*＊\"'「」『』【】[]" for c in sentence)
        return sentence if plain and 8 <= len(sentence) <= 60 else None
    words = sentence.split()
    if language.markers and not set(language.markers.split()) & {w.lower().strip(".,;:!?") for w in words}:
        return None
    if not 4 <= len(words) <= 30 or not sentence[0].isupper() and language.script == "LATIN":
        return None
    return sentence


@cache
def sentences(code: str) -> tuple[str, ...]:
    """Every distinct clean sentence found for a language, in a fixed order."""
    language = LANGUAGES[code]
    found: set[str] = set()
    for folder in language.folders:
        pages = sorted(p for p in (MAN / folder).rglob("*") if p.is_file()) if (MAN / folder).is_dir() else []
        texts = [groff_text(page) for page in pages]
        texts += [s for c in sorted((LOCALE / folder / "LC_MESSAGES").glob("*.mo")) for s in catalogue_strings(c)]
        for text in texts:
            for paragraph in text.split("\n"):
                for piece in _SENTENCE_END.split(paragraph):
                    tidy = clean(piece, language)
                    if tidy is not None:
                        found.add(tidy)
    return tuple(sorted(found))


def read_aloud(sentence: str, language: Language) -> str:
    """What espeak-ng reads for ``sentence``: the sentence, or where espeak-ng cannot read the script (it names
    kanji and most hanzi "Chinese letter" in English) its reading: Japanese in hiragana (pykakasi), Chinese in
    numbered-tone pinyin for the cmn-latn-pinyin voice (pypinyin)."""
    if language.reading == "kana":
        import pykakasi

        return "".join(part["hira"] for part in _kakasi(pykakasi).convert(sentence))
    if language.reading == "pinyin":
        import pypinyin

        syllables = pypinyin.lazy_pinyin(sentence, style=pypinyin.Style.TONE3, neutral_tone_with_five=True)
        text = " ".join(syllables)
        for mark, plain in (("，", ","), ("。", "."), ("？", "?"), ("！", "!"), ("；", ";"), ("：", ":"), ("、", ",")):
            text = text.replace(f" {mark}", plain).replace(mark, plain)
        return text
    return sentence


@cache
def _kakasi(module):
    return module.kakasi()


def held_out(sentence: str, percent: int) -> bool:
    return int(hashlib.sha1(sentence.encode("utf-8")).hexdigest()[:8], 16) % 100 < percent


def split_sentences(code: str, percent: int) -> tuple[list[str], list[str]]:
    """A language's training and held-out sentences, as written (``read_aloud`` gives what espeak-ng reads)."""
    every = sentences(code)
    return [s for s in every if not held_out(s, percent)], [s for s in every if held_out(s, percent)]


def speakers(code: str, held: bool) -> list[Voice]:
    variants = HELD_OUT_VARIANTS if held else TRAINING_VARIANTS
    return [Voice("espeak-ng", voice + variant) for voice in LANGUAGES[code].espeak for variant in variants]


def short_clip(rng: random.Random, written: list[str], language: Language | None, voices: list[Voice]) -> tuple:
    """A short clip (1-3 sentences) of ``written`` sentences: its text as read, samples, voice, and the text as
    written where espeak-ng reads another form of it (kana, pinyin), else None."""
    plan = distill.synthetic_plan(rng, written, voices)
    text = plan["text"]
    if language is not None and language.reading:
        plan["text"] = read_aloud(text, language)
    return (*distill.render_plan(plan), text if plan["text"] != text else None)


def long_clip(rng: random.Random, written: list[str], language: Language | None, voices: list[Voice]) -> tuple:
    """A long clip (``distill.long_clip``) of ``written`` sentences, as espeak-ng reads them."""
    read = written if language is None or not language.reading else [read_aloud(s, language) for s in written]
    return (*distill.long_clip(rng, read, voices), None)


def _speak_set(
    work_dir: Path, split: str, jobs: list[tuple[str, str]], make: Callable[[random.Random, str], tuple]
) -> list[dict]:
    """Clips of ``split``: one per (generator seed, language) job, each drawn from its own generator."""
    records = []
    for index, (seed, code) in enumerate(jobs):
        text, samples, voice, written = make(random.Random(seed), code)
        path = work_dir / "audio" / split / f"{index:05d}.wav"
        seconds = distill.write_clip(path, samples)
        record = {"split": split, "path": str(path), "text": text, "voice": voice, "seconds": seconds, "language": code}
        records.append(record | ({"written": written} if written is not None else {}))
    return records


def make_manifest(args) -> list[dict]:
    english_train, english_held = distill.split_sentences(args.held_out_percent)
    texts = {code: split_sentences(code, args.held_out_percent) for code in args.languages}
    texts["en"] = (english_train, english_held)

    def voices_of(code: str, held: bool) -> list[Voice]:
        if code == "en":
            return distill.VOICES
        return speakers(code, held)

    def short(held: bool) -> Callable[[random.Random, str], tuple]:
        return lambda rng, code: short_clip(rng, texts[code][held], LANGUAGES.get(code), voices_of(code, held))

    def long(held: bool) -> Callable[[random.Random, str], tuple]:
        return lambda rng, code: long_clip(rng, texts[code][held], LANGUAGES.get(code), voices_of(code, held))

    codes = [*args.languages, "en"]
    plan = [
        ("train", args.short_clips, short(False)),
        ("train_long", args.long_clips, long(False)),
        ("heldout", args.heldout_clips, short(True)),
        ("heldout_long", args.heldout_long_clips, long(True)),
    ]
    records = []
    for split, per_language, make in plan:
        jobs = [(f"{args.seed}:{split}:{code}:{i}", code) for i in range(per_language) for code in codes]
        records += _speak_set(args.work_dir, split, jobs, make)
        print(f"{split}: {len(jobs)} clips")
    rng = random.Random(f"{args.seed}:tasks")
    for record in records:
        translate = record["language"] != "en" and record["split"] == "train" and rng.random() < args.translate_share
        record["task"] = "translate" if translate else "transcribe"
    # clips of one language and task side by side: the encode stage labels each kind of a chunk in one batch
    splits = [split for split, _, _ in plan]
    return sorted(records, key=lambda r: (splits.index(r["split"]), r["language"], r["task"]))


def label_counts(work_dir: Path, splits: tuple[str, ...], end_of_text: int) -> dict[str, Counter[int]]:
    """Per language, how often each text token occurs in base's labels of the encoded ``splits``."""
    import torch

    counts: dict[str, Counter[int]] = defaultdict(Counter)
    for split in splits:
        for path in sorted((work_dir / "encoded" / split).glob("*.pt")):
            chunk = torch.load(path)
            for row, kind in enumerate(chunk["languages"]):
                start, end = int(chunk["prompt_lengths"][row]), int(chunk["lengths"][row])
                language = kind.split(":")[0] if kind.endswith(":transcribe") else "en"  # translations are English
                counts[language].update(t for t in chunk["ids"][row, start:end].tolist() if t < end_of_text)
    return counts


def choose_output_tokens(work_dir: Path, keep: list[int], size: int, tokenizer, percent: int) -> list[int]:
    """A multilingual output vocabulary of ``size`` tokens: ``keep`` (the English draft's, special and timestamp
    tokens among them), then each language's most frequent tokens in turn (in base's training labels first, then in
    its training sentences), one language after another, until ``size``."""
    end_of_text = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    labels = label_counts(work_dir, distill.TRAIN_SPLITS, end_of_text)
    ranked: dict[str, list[int]] = {}
    for code in sorted(set(labels) - {"en"}):
        corpus: Counter[int] = Counter()
        train = [read_aloud(s, LANGUAGES[code]) for s in split_sentences(code, percent)[0]]
        for ids in tokenizer([" " + s for s in train], add_special_tokens=False).input_ids:
            corpus.update(t for t in ids if t < end_of_text)
        ranked[code] = [t for t, _ in labels[code].most_common()] + [t for t, _ in corpus.most_common()]
    chosen, taken = list(keep), set(keep)
    position = dict.fromkeys(ranked, 0)
    while len(chosen) < size and any(position[c] < len(ranked[c]) for c in ranked):
        for code in ranked:
            while position[code] < len(ranked[code]) and ranked[code][position[code]] in taken:
                position[code] += 1
            if position[code] < len(ranked[code]) and len(chosen) < size:
                token = ranked[code][position[code]]
                chosen.append(token)
                taken.add(token)
    return sorted(chosen)


def agreement_by_language(work_dir: Path, draft_folders: dict[str, str | None], full: bool = False) -> dict:
    """Teacher-forced agreement of each saved draft with base's next token, per held-out split and language."""
    import torch

    from seq2spec.default_models import load_whisper_base
    from seq2spec.whisper.draft import load_whisper_draft

    big, _ = load_whisper_base()
    pad_id = big.generation_config.eos_token_id
    drafts = {name: load_whisper_draft(big, folder, full_vocabulary=full) for name, folder in draft_folders.items()}
    results: dict[str, dict] = {}
    for split in ("heldout", "heldout_long"):
        folder = work_dir / "encoded" / split
        if not any(folder.glob("*.pt")):
            continue
        data = distill.EncodedSet(folder)
        kinds = [k for p in sorted(folder.glob("*.pt")) for k in torch.load(p)["languages"]]
        every = data.items
        for kind in sorted(set(kinds)):
            data.items = [item for item, k in zip(every, kinds, strict=True) if k == kind]
            for name, draft in drafts.items():
                agreement, tokens = distill.agreement_on(draft, data, pad_id)
                results.setdefault(f"{split} {kind}", {})[name] = (round(agreement, 4), tokens)
        data.items = every
    return results


CARD = """# Distilled multilingual draft for Whisper base (seq2spec)

A 2-layer decoder that proposes tokens for Whisper base in seq2spec's speculative decoding, in English and {count}
other languages. It is a `WhisperForCausalLM` whose encoder input, token embeddings, position embeddings and output
projection are base's own (shared, not stored); only its 2 decoder layers and final layer norm are here
(`decoder.safetensors`, fp16, {own_millions:.1f}M parameters), with the ids of the {output_tokens:,} tokens it scores.
seq2spec proposes with it for clips given or detected in any language but English (`languages` in
`draft_config.json` names the {count} it trained in), and with the English draft (`../whisper_base_draft`) for
English: `seq2spec transcribe`, `seq2spec serve` and `seq2spec.default_models.shipped_whisper()` (its
`language_drafts`, from `whisper_base_language_drafts(base)`). It carries its tuned speculation options
(`draft_config.json`). Its cross-attention key and value projections are base's layers 0 and 5, frozen. Its
proposals are checked by base, so transcripts are base's greedy transcripts
whatever the draft's quality.

## Training
- Made in four runs on a 2-core CPU. First `recipes/distill_whisper_draft.py` (English: flite and espeak-ng voices
  reading WordNet examples and fortunes, 3,224 clips, 13.5 h; layers initialised from base's decoder layers 0 and 5;
  2,400 steps). Then, from that draft, `recipes/multilingual_speech.py` (728 of the clips below) and
  `recipes/distill_whisper_draft.py --stage encode/train --init-draft` on it: 450 steps in 32.5 min. Then, from that
  draft, on those and 2,100 more short clips (150 per language, labelled by `--stage relabel`): 400 steps in
  20.9 min. Then, from that draft, on those and 350 more long clips (25 per language, labelled by `--stage
  relabel`): {steps} steps in {train_minutes} min (the commands in recipes/README.md).
- Loss: cross-entropy with base's greedy next token + 1.0 x KL to base's top-16 next-token distribution,
  teacher-forced on base's own greedy transcripts (in the clip's language, a share translated into English, some
  with timestamps as long form uses them), over the draft's output vocabulary. Embeddings, output projection and
  cross-attention key/value projections frozen.
- Speech ({clips} clips, {hours:.2f} h, all made offline): espeak-ng in {languages} and English, nine variants per
  language at rates 0.8-1.3x, random gain, light noise on some clips, speaking 1-3 sentences (short clips) or
  reading for 12-28 s or past 30 s cut at 30 s (long clips); text from the translated manual pages and translation
  catalogues of Debian packages (Japanese read as hiragana, Chinese as pinyin); English as in the first run. Short
  non-English clips: {translate:.0%} labelled as translations into English. Held out: sentences by content hash and
  three espeak-ng variants (m7, f4, klatt4) that speak no training clip.
- Output vocabulary: the English draft's 16,384 tokens (every special and timestamp token among them), then each
  language's most frequent tokens in base's labels and training sentences, one language after another.

## Held-out agreement (teacher-forced, the draft's next token against base's)
| language | short clips | long clips |
|---|---|---|
{table}
## Limits
Synthetic speech only: agreement on natural, accented or noisy speech is lower, which costs speed, never accuracy.
In languages it never trained in it proposes less well, though still better than the English draft (held-out espeak-ng
long files, tokens per big forward against the English draft's: ca 2.38 / 1.72, cs 1.38 / 1.13, ko 1.22 / 1.01;
benchmarks/README.md). Tokens outside its output vocabulary are never proposed.
"""


def write_card(work_dir: Path, export_dir: Path, agreement: dict) -> None:
    """The exported draft's model card, from the work dir's manifest, metrics and per-language agreement; its config
    names the languages it trained in besides English (``languages``)."""
    metrics = json.loads((export_dir / "metrics.json").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in (work_dir / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    train = [r for r in records if r["split"] in distill.TRAIN_SPLITS]
    foreign = [r for r in train if r["split"] == "train" and r["language"] != "en"]
    codes = sorted({r["language"] for r in train} - {"en"})
    rows = []
    for code in ["en", *codes]:
        cells = [agreement.get(f"{split} {code}:transcribe", {}).get("new") for split in ("heldout", "heldout_long")]
        shown = ["-" if cell is None else f"{cell[0]:.3f} ({cell[1]} tokens)" for cell in cells]
        rows.append(f"| {code} | " + " | ".join(shown) + " |")
    card = CARD.format(
        count=len(codes),
        languages=", ".join(codes),
        clips=len(train),
        hours=sum(r.get("seconds", 0) for r in train) / 3600,
        translate=sum(r["task"] == "translate" for r in foreign) / max(1, len(foreign)),
        table="\n".join(rows),
        own_millions=metrics["draft_own_parameters"] / 1e6,
        **metrics,
    )
    (export_dir / "MODEL_CARD.md").write_text(card, encoding="utf-8")
    # the languages seq2spec proposes for with this draft (language_drafts); English keeps the English draft
    config_path = export_dir / "draft_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["languages"] = codes
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--languages", nargs="+", default=list(DRAFT_LANGUAGES), choices=list(LANGUAGES))
    parser.add_argument("--short-clips", type=int, default=60, help="short training clips per language")
    parser.add_argument("--long-clips", type=int, default=30, help="long training clips per language")
    parser.add_argument("--heldout-clips", type=int, default=8, help="short held-out clips per language")
    parser.add_argument("--heldout-long-clips", type=int, default=3, help="long held-out clips per language")
    parser.add_argument("--held-out-percent", type=int, default=8)
    parser.add_argument("--translate-share", type=float, default=0.2, help="short non-English clips to translate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--counts", action="store_true", help="print the sentences found per language and stop")
    parser.add_argument(
        "--agreement",
        nargs="+",
        metavar="NAME=FOLDER",
        help="instead: teacher-forced agreement of saved drafts ('default': the shipped one) per held-out language "
        "in --work-dir's encoded held-out sets",
    )
    parser.add_argument("--full-vocabulary", action="store_true", help="--agreement: drafts score every token")
    parser.add_argument(
        "--card",
        type=Path,
        metavar="EXPORT_DIR",
        help="instead: the exported draft's per-language held-out agreement and its model card",
    )
    parser.add_argument(
        "--vocabulary",
        type=int,
        metavar="SIZE",
        help="instead: write --work-dir's output_tokens.pt, SIZE tokens: the --english-draft's, then each "
        "language's most frequent in the encoded training labels and sentences (run after --stage encode)",
    )
    parser.add_argument("--english-draft", type=Path, help="--vocabulary: the saved draft whose tokens are kept")
    args = parser.parse_args()
    if args.vocabulary:
        import torch

        from seq2spec.default_models import load_whisper_base
        from seq2spec.whisper.draft import load_whisper_draft, output_token_ids

        big, processor = load_whisper_base()
        keep = output_token_ids(load_whisper_draft(big, args.english_draft)).tolist()
        tokens = choose_output_tokens(args.work_dir, keep, args.vocabulary, processor.tokenizer, args.held_out_percent)
        torch.save(torch.tensor(tokens), args.work_dir / "output_tokens.pt")
        print(f"{len(tokens)} output tokens -> {args.work_dir / 'output_tokens.pt'}")
        return
    if args.card:
        results = agreement_by_language(args.work_dir, {"new": str(args.card)})
        (args.card / "agreement_by_language.json").write_text(json.dumps(results, indent=1) + "\n")
        write_card(args.work_dir, args.card, results)
        return
    if args.agreement:
        folders = {e.partition("=")[0]: (None if e.partition("=")[2] in ("", "default") else e.partition("=")[2])
                   for e in args.agreement}  # fmt: skip
        results = agreement_by_language(args.work_dir, folders, args.full_vocabulary)
        for key, values in results.items():
            print(key, " ".join(f"{name} {agreement:.3f} ({tokens})" for name, (agreement, tokens) in values.items()))
        (args.work_dir / "agreement_by_language.json").write_text(json.dumps(results, indent=1) + "\n")
        return
    if args.counts:
        for code in args.languages:
            train, held = split_sentences(code, args.held_out_percent)
            print(code, len(train), len(held), train[:3])
        return
    args.work_dir.mkdir(parents=True, exist_ok=True)
    distill.write_manifest(args.work_dir / "manifest.jsonl", make_manifest(args))


if __name__ == "__main__":
    main()
