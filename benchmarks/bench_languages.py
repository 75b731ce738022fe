"""Whisper base in many languages: seq2spec with one or more drafts beside base's own greedy decoding.

Per language, on speech no draft trained on: held-out sentences (``benchmarks/data/held_out_sentences.json``, drawn
once from the sentences ``recipes/multilingual_speech.py`` holds out, so every machine speaks the same text) read by
the espeak-ng variants no training clip uses (``HELD_OUT_VARIANTS``):

- a long file (``--seconds``, default 60 s: one voice reading sentence after sentence with pauses), decoded with
  Whisper's sequential long form, greedy and with each side in turn (one run each, base's time first);
- ``--clips`` short clips (1-2 sentences) decoded as one batch, transcribed, and for the non-English languages
  translated into English (``task="translate"``).

Each row: seconds, the ratio of greedy's seconds to seq2spec's, tokens per big row-forward (generated tokens over
the big model's row forwards; greedy has 1.0), and whether every transcript equals greedy's. The language is given
(``language=``) as a user who knows it would give it; ``--detect``: not given, Whisper detects it in each clip (a
routed speculator then proposes with the draft of the language detected). By default the one side is the shipped
pair as ``seq2spec transcribe`` runs it (``--routed shipped=default``: the English draft for English, the
multilingual draft for every other language). Each side's draft for each language is used once on a short clip
before the timed runs. ``--check`` exits 1 unless every transcript is identical and each long file reaches
``--least-speedup`` (and all of them together ``--least-overall``) with the first routed side (else the first draft).

    python benchmarks/bench_languages.py --check                             # the shipped pair, the kept check
    python benchmarks/bench_languages.py --drafts english=default --routed shipped=default new=runs/ml/export
    python benchmarks/bench_languages.py --drafts english=default new=runs/ml/export+full --routed  # one draft each
    python benchmarks/bench_languages.py --freeze 60 --languages ca cs ko    # more languages' sentences
    python benchmarks/bench_languages.py --routed shipped=default unpaused=default,pause_draft=false  # options

A side's ``FOLDER`` may be followed by ``,OPTION=VALUE`` speculation options (``SpeculationOptions`` fields) for it.

Speech needs espeak-ng (``apt-get install espeak-ng``); ``--freeze`` the translated manual pages and catalogues the
recipe reads (``apt-get install manpages-fr ...``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np
import soundfile
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "recipes"))
import distill_whisper_draft as distill  # noqa: E402
import multilingual_speech as speech  # noqa: E402
from voices import Voice, speak  # noqa: E402

RATE = 16_000
# natural voices no draft trains on, for the languages whose Kokoro phonemes espeak-ng's IPA gives well
KOKORO_VOICES = {"fr": ("ff_siwis",), "es": ("em_alex",), "it": ("im_nicola",), "pt": ("pf_dora",)}
DEFAULT_LANGUAGES = ["en", "fr", "es", "de", "it", "pt", "ru", "pl", "ja", "zh", "hi"]
ENGLISH_VOICES = ("en-us", "en")
# the held-out sentences every run reads, frozen so that runs on any machine speak the same text
SENTENCES = HERE / "data" / "held_out_sentences.json"
FROZEN_SOURCE = (
    "Held-out sentences (by content hash) of recipes/multilingual_speech.py (Debian's translated manual pages and "
    "translation catalogues; Japanese in hiragana, Chinese in numbered-tone pinyin, as espeak-ng reads them) and, for "
    "en, of recipes/distill_whisper_draft.py (WordNet examples and fortunes); no draft trains on them."
)


def catalogue_sentences(code: str, count: int, seed: int = 0) -> list[str]:
    """``count`` of a language's held-out sentences drawn from this machine's system packages, as espeak-ng reads
    them (what ``--freeze`` stores)."""
    if code != "en" and code not in speech.LANGUAGES:
        known = " ".join(["en", *sorted(speech.LANGUAGES)])
        raise SystemExit(f"{code}: not a language recipes/multilingual_speech.py makes speech in ({known})")
    if code == "en":
        held = distill.split_sentences(5)[1]
    else:
        held = [speech.read_aloud(s, speech.LANGUAGES[code]) for s in speech.split_sentences(code, 8)[1]]
    if not held:
        raise SystemExit(f"{code}: no held-out sentences on this machine (install the packages the recipe reads)")
    return random.Random(f"{seed}:freeze:{code}").sample(held, min(count, len(held)))


def frozen_sentences(path: Path) -> dict[str, list[str]]:
    """Language code -> its held-out sentences as stored in ``path`` (empty where there is no file)."""
    return json.loads(path.read_text(encoding="utf-8"))["languages"] if path.is_file() else {}


def freeze(path: Path, codes: list[str], count: int) -> None:
    """Store ``count`` held-out sentences of each of ``codes`` in ``path``, beside the languages already there."""
    languages = frozen_sentences(path)
    for code in codes:
        languages[code] = catalogue_sentences(code, count)
        print(f"{code}: {len(languages[code])} sentences frozen", flush=True)
    document = {"source": FROZEN_SOURCE, "languages": dict(sorted(languages.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def held_out_sentences(code: str, path: Path = SENTENCES) -> list[str]:
    sentences = frozen_sentences(path).get(code)
    if not sentences:
        raise SystemExit(f"{code}: no held-out sentences in {path}; add them with --freeze --languages {code}")
    return sentences


def held_out_voices(code: str) -> list[Voice]:
    if code == "en":
        return [Voice("espeak-ng", v + variant) for v in ENGLISH_VOICES for variant in speech.HELD_OUT_VARIANTS]
    return speech.speakers(code, held=True)


def cached(path: Path, make) -> np.ndarray:
    """The audio at ``path``, made by ``make()`` and written there first when missing."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        soundfile.write(path, make(), RATE, subtype="PCM_16")
    return soundfile.read(path, dtype="float32")[0]


def long_file(
    code: str, sentences: list[str], seconds: float, seed: int, voice: Voice | None = None, folder: Path | None = None
):
    """One held-out voice (or ``voice``) reading ``sentences`` for about ``seconds``, pauses between them."""
    rng = random.Random(f"{seed}:long:{code}")
    chosen = rng.choice(held_out_voices(code))
    voice = voice or chosen
    pieces, total = [], 0.0
    while total < seconds:
        spoken = speak(rng.choice(sentences), voice, rng.uniform(0.9, 1.15), kokoro_folder=folder)
        pause = np.zeros(int(rng.uniform(0.2, 0.8) * RATE), dtype=np.float32)
        pieces += [spoken, pause]
        total += (len(spoken) + len(pause)) / RATE
    return np.concatenate(pieces) * 0.8


def short_clip_plans(code: str, sentences: list[str], count: int, seed: int) -> list[tuple[str, Voice, float]]:
    """``count`` short clips to speak: (1-2 of ``sentences``, a held-out voice, a speaking rate) each."""
    rng = random.Random(f"{seed}:short:{code}")
    voices = held_out_voices(code)
    plans = []
    for _ in range(count):
        text = " ".join(rng.choice(sentences) for _ in range(rng.choice((1, 2))))
        plans.append((text, rng.choice(voices), rng.uniform(0.9, 1.15)))
    return plans


def audio_sets(code: str, args, folder: Path) -> tuple[list[tuple[str, list[np.ndarray], str]], list[np.ndarray]]:
    """``([(label, clips, task)], the short clips)`` of one language: its long files and its short clips, made once
    into ``folder`` and read from there after."""
    sentences = held_out_sentences(code, args.sentences)
    long = cached(folder / f"{code}_long.wav", lambda: long_file(code, sentences, args.seconds, args.seed))
    sets = [("long file", [long])]
    for name in KOKORO_VOICES.get(code, ()) if args.kokoro_voices is not None else ():
        voice = Voice("kokoro", name)
        audio = cached(
            folder / f"{code}_{name}_long.wav",
            lambda voice=voice: long_file(code, sentences, args.seconds, args.seed, voice, args.kokoro_voices),
        )
        sets.append((f"long file, Kokoro {name}", [audio]))
    clips = [
        cached(folder / f"{code}_short{index:02d}.wav", lambda plan=plan: speak(*plan) * 0.8)
        for index, plan in enumerate(short_clip_plans(code, sentences, args.clips, args.seed))
    ]
    sets.append(("short clips", clips))
    return [(label, audio, "transcribe") for label, audio in sets], clips


def side(entry: str) -> tuple[str, str, dict]:
    """``NAME=FOLDER[,OPTION=VALUE...]`` -> (name, folder, speculation options as keywords)."""
    name, _, rest = entry.partition("=")
    folder, *settings = rest.split(",")
    options = {}
    for setting in settings:
        key, _, value = setting.partition("=")
        lowered = value.lower()
        options[key] = lowered == "true" if lowered in ("true", "false") else json.loads(value)
    return name, folder, options


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def measure(big, processor, speculators: dict, clips: list[np.ndarray], **options) -> dict:
    """Greedy, then each speculator in turn, on ``clips`` as one call: seconds, ratio, tokens per forward, equality."""
    from seq2spec.whisper.transcription import transcribe_clips

    def greedy(features, attention_mask, **arguments):
        return big.generate(features, attention_mask=attention_mask, **arguments)

    expected, greedy_seconds = timed(
        lambda: transcribe_clips(clips, processor, greedy, multilingual=True, batch_size=len(clips), **options)
    )
    row = {"greedy_s": round(greedy_seconds, 2), "drafts": {}, "text": expected[0][:120]}
    for name, speculator in speculators.items():
        texts, seconds = timed(lambda s=speculator: s.transcribe(clips, RATE, batch_size=len(clips), **options))
        stats = speculator.last_stats
        row["drafts"][name] = {
            "seconds": round(seconds, 2),
            "speedup": round(greedy_seconds / seconds, 3),
            "tokens_per_big_forward": round(stats.tokens_per_big_forward, 3),
            "acceptance": round(stats.acceptance_rate, 3),
            "identical": texts == expected,
        }
    return row


def warm_up(speculators: dict, first_clips: dict[str, np.ndarray], detect: bool) -> None:
    """Each speculator's draft for each language used once (its first use checks its fast paths)."""
    for speculator in speculators.values():
        used = set()
        for code, clip in first_clips.items():
            if id(speculator.for_language(code)) not in used:
                used.add(id(speculator.for_language(code)))
                speculator.transcribe(clip, RATE, language=None if detect else code)


def markdown(result: dict) -> str:
    names = result["drafts"]
    head = "| language | set | greedy s | " + " | ".join(f"{n} speedup | {n} tokens/forward" for n in names) + " |"
    lines = [result["header"], "", head, "|---|---|---:|" + "---:|---:|" * len(names)]
    for row in result["rows"]:
        cells = []
        for name in names:
            draft = row["drafts"][name]
            mark = "" if draft["identical"] else " (differs!)"
            cells.append(f"{draft['speedup']:.2f}x{mark} | {draft['tokens_per_big_forward']:.2f}")
        lines.append(f"| {row['language']} | {row['set']} | {row['greedy_s']:.1f} | " + " | ".join(cells) + " |")
    lines += ["", "Long files over all languages (sum of greedy seconds over sum of seq2spec seconds):"]
    lines += [f"- {name}: {value:.2f}x" for name, value in result["overall_long_speedup"].items()]
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["rows"] if r["set"].startswith("long file")]
    names = list(result["drafts"])
    figure, axes = plt.subplots(1, 2, figsize=(12, 4))
    width = 0.8 / len(names)
    for index, name in enumerate(names):
        x = np.arange(len(rows)) + index * width
        axes[0].bar(x, [r["drafts"][name]["tokens_per_big_forward"] for r in rows], width, label=name)
        axes[1].bar(x, [r["drafts"][name]["speedup"] for r in rows], width, label=name)
    for axis, title in zip(axes, ("tokens per big row-forward", "speedup over greedy"), strict=True):
        axis.set_xticks(np.arange(len(rows)) + width * (len(names) - 1) / 2, [r["language"] for r in rows])
        axis.set_title(f"long files: {title}")
        axis.axhline(1.0, color="grey", linewidth=0.5)
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", nargs="+", default=DEFAULT_LANGUAGES)
    parser.add_argument(
        "--drafts",
        nargs="+",
        default=[],
        help="NAME=FOLDER of saved drafts, each for every language ('default': the shipped English draft; "
        "FOLDER+full: scoring every token)",
    )
    parser.add_argument(
        "--routed",
        nargs="*",
        default=["shipped=default"],
        help="NAME=FOLDER: the first of --drafts (else the shipped English draft) for English with FOLDER's draft "
        "for every other language given or detected (language_drafts; 'default': the shipped multilingual draft, "
        "so shipped=default is what seq2spec transcribe runs); the first routed side, else the first draft, is "
        "--check's",
    )
    parser.add_argument("--sentences", type=Path, default=SENTENCES, help="the held-out sentences to speak")
    parser.add_argument(
        "--freeze",
        type=int,
        metavar="COUNT",
        help="store COUNT held-out sentences of each of --languages from this machine's packages in --sentences "
        "(beside those already there) and stop",
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each language's long file")
    parser.add_argument("--clips", type=int, default=8, help="short clips per language")
    parser.add_argument("--no-translate", action="store_true", help="skip the translation rows")
    parser.add_argument("--detect", action="store_true", help="give no language: Whisper detects it per clip")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--kokoro-voices",
        type=Path,
        help="folder of kokoro-js voice files: adds a long file read by a natural Kokoro voice for fr, es, it, pt",
    )
    parser.add_argument("--audio-dir", type=Path, default=Path("runs/bench_languages_audio"), help="speech made once")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--name", default="languages_cpu")
    parser.add_argument("--prepare", action="store_true", help="make the speech into --audio-dir and stop")
    parser.add_argument("--check", action="store_true", help="exit 1 unless identical and fast enough")
    parser.add_argument("--least-speedup", type=float, default=1.4, help="--check: each long file")
    parser.add_argument("--least-overall", type=float, default=1.5, help="--check: all long files together")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.freeze is not None:
        freeze(args.sentences, args.languages, args.freeze)
        return 0
    if not args.drafts and not args.routed:
        parser.error("nothing to measure: give --drafts or --routed")
    text_hash = hashlib.sha1(json.dumps(frozen_sentences(args.sentences), sort_keys=True).encode()).hexdigest()[:8]
    audio_dir = args.audio_dir / f"seed{args.seed}_{args.seconds:.0f}s_{args.clips}clips_{text_hash}"
    if args.prepare:
        for code in args.languages:
            audio_sets(code, args, audio_dir)
            print(f"{code}: speech in {audio_dir}", flush=True)
        return 0

    from seq2spec import Seq2SeqSpeculator
    from seq2spec.default_models import load_whisper_base
    from seq2spec.whisper.draft import WHISPER_BASE_MULTILINGUAL_DRAFT_DIR, load_whisper_draft
    from seq2spec.whisper.languages import languages_besides_english

    big, processor = load_whisper_base()
    speculators = {}
    for entry in args.drafts:
        name, folder, options = side(entry)
        full = folder.endswith("+full")
        folder = folder.removesuffix("+full")
        draft = load_whisper_draft(big, None if folder in ("", "default") else folder, full_vocabulary=full)
        speculators[name] = Seq2SeqSpeculator(big, draft, processor, **options)
    first_folder = side(args.drafts[0])[1].removesuffix("+full") if args.drafts else "default"
    for entry in args.routed:
        name, folder, options = side(entry)
        draft = load_whisper_draft(big, None if first_folder in ("", "default") else first_folder)
        folder = str(WHISPER_BASE_MULTILINGUAL_DRAFT_DIR) if folder in ("", "default") else folder
        others = dict.fromkeys(languages_besides_english(big), folder)  # as the shipped default routes
        speculators[name] = Seq2SeqSpeculator(big, draft, processor, language_drafts=others, **options)
    warm_up(speculators, {code: audio_sets(code, args, audio_dir)[1][0] for code in args.languages}, args.detect)
    rows = []
    for code in args.languages:
        sets, clips = audio_sets(code, args, audio_dir)
        if code != "en" and not args.no_translate:
            sets.append(("short clips, translate", clips, "translate"))
        for label, audio, task in sets:
            row = measure(big, processor, speculators, audio, language=None if args.detect else code, task=task)
            row.update(language=code, set=label, audio_s=round(sum(len(a) for a in audio) / RATE, 1))
            rows.append(row)
            summary = ", ".join(
                f"{n} {d['speedup']:.2f}x {d['tokens_per_big_forward']:.2f} tok/fwd{'' if d['identical'] else ' DIFF'}"
                for n, d in row["drafts"].items()
            )
            print(f"{code} {label}: greedy {row['greedy_s']:.1f} s; {summary}", flush=True)
    long_rows = [r for r in rows if r["set"].startswith("long file")]
    overall = {
        name: round(sum(r["greedy_s"] for r in long_rows) / sum(r["drafts"][name]["seconds"] for r in long_rows), 3)
        for name in speculators
    }
    header = (
        f"Whisper base, held-out sentences and voices per language: long files of about {args.seconds:.0f} s "
        f"(sequential long form), {args.clips} short clips per language as one batch; language "
        f"{'detected' if args.detect else 'given'}; {args.threads} CPU threads, "
        f"{platform.machine()}, torch {torch.__version__}; each side run once, greedy first."
    )
    drafts = dict(e.partition("=")[::2] for e in args.drafts)
    english = args.drafts[0] if args.drafts else "the shipped English draft"
    drafts.update({name: f"{english} for en, {folder or 'default'} for the others" for name, folder in
                   (e.partition("=")[::2] for e in args.routed)})  # fmt: skip
    result = {"header": header, "drafts": drafts, "rows": rows,
              "overall_long_speedup": overall}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(result))
    plot(result, args.out / f"{args.name}.png")
    print(markdown(result))
    if not args.check:
        return 0
    first = args.routed[0].partition("=")[0] if args.routed else next(iter(speculators))
    failures = [f"{r['language']} {r['set']}: transcripts differ" for r in rows
                for d in r["drafts"].values() if not d["identical"]]  # fmt: skip
    failures += [
        f"{r['language']} long file: {r['drafts'][first]['speedup']:.2f}x < {args.least_speedup}x"
        for r in long_rows
        if r["drafts"][first]["speedup"] < args.least_speedup
    ]
    if overall[first] < args.least_overall:
        failures.append(f"all long files: {overall[first]:.2f}x < {args.least_overall}x")
    for failure in failures:
        print(f"check failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
