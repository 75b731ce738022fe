"""The shipped Whisper pair with its draft paused where it does not pay (``pause_draft``, the default) and never
paused, on each language's long file of ``bench_languages.py`` (its frozen held-out sentences and voices).

Both sides are one speculator whose option is switched between calls, so they share everything else (the big head's
products chosen by timing among them). Per language, in one process: each side once on the file (their first use of
its shapes), greedy's sequential long form once, then the sides in turn, paused, unpaused, unpaused, paused; each
side's mean of two. Every transcript
must equal greedy's. Rows: seconds, speedups over greedy, paused against unpaused, tokens per big row-forward and
the rounds that verified no candidate.

    python benchmarks/bench_draft_pause.py --languages en fr de ja zh cs ko pl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_languages as languages  # noqa: E402


def timed(function) -> tuple[object, float]:
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def set_pause(speculator, code: str, pause: bool) -> None:
    """``pause_draft`` for ``speculator`` and the one it routes ``code`` to."""
    for routed in {id(s): s for s in (speculator, speculator.for_language(code))}.values():
        routed.options = routed.options.updated(pause_draft=pause)


def measure(big, processor, speculator, code: str, audio) -> dict:
    from seq2spec.whisper.transcription import transcribe_clips

    def greedy(features, attention_mask, **arguments):
        return big.generate(features, attention_mask=attention_mask, **arguments)

    sides = ("paused", "unpaused")
    for name in sides:
        set_pause(speculator, code, name == "paused")
        speculator.transcribe([audio], languages.RATE, language=code)
    expected, greedy_seconds = timed(
        lambda: transcribe_clips([audio], processor, greedy, multilingual=True, batch_size=1, language=code)
    )
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    stats = {}
    for name in ("paused", "unpaused", "unpaused", "paused"):
        set_pause(speculator, code, name == "paused")
        texts, elapsed = timed(lambda: speculator.transcribe([audio], languages.RATE, language=code))
        if texts != expected:
            raise AssertionError(f"{code} {name}: the transcript differs from greedy's")
        seconds[name].append(elapsed)
        stats[name] = speculator.last_stats
    mean = {name: sum(values) / len(values) for name, values in seconds.items()}
    return {
        "language": code,
        "greedy_s": round(greedy_seconds, 2),
        "paused_s": round(mean["paused"], 2),
        "unpaused_s": round(mean["unpaused"], 2),
        "paused_speedup": round(greedy_seconds / mean["paused"], 3),
        "unpaused_speedup": round(greedy_seconds / mean["unpaused"], 3),
        "paused_over_unpaused": round(mean["unpaused"] / mean["paused"], 3),
        "paused_tokens_per_forward": round(stats["paused"].tokens_per_big_forward, 2),
        "unpaused_tokens_per_forward": round(stats["unpaused"].tokens_per_big_forward, 2),
        "rounds_without_candidates": stats["paused"].rounds_without_candidates,
        "big_forwards_paused": stats["paused"].big_forwards,
        "identical": True,
    }


def markdown(result: dict) -> str:
    lines = [
        result["header"],
        "",
        "| language | greedy s | paused speedup | unpaused speedup | paused / unpaused | tokens/forward paused | "
        "unpaused | rounds without candidates |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['language']} | {row['greedy_s']:.1f} | {row['paused_speedup']:.2f}x | "
            f"{row['unpaused_speedup']:.2f}x | {row['paused_over_unpaused']:.3f} | "
            f"{row['paused_tokens_per_forward']:.2f} | {row['unpaused_tokens_per_forward']:.2f} | "
            f"{row['rounds_without_candidates']} of {row['big_forwards_paused']} |"
        )
    lines += ["", f"All long files: paused {result['overall']['paused']:.2f}x, unpaused "
              f"{result['overall']['unpaused']:.2f}x greedy."]  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    positions = range(len(rows))
    figure, axis = plt.subplots(figsize=(8, 3.5))
    for offset, name in ((-0.2, "paused"), (0.2, "unpaused")):
        axis.bar([p + offset for p in positions], [r[f"{name}_speedup"] for r in rows], 0.4, label=name)
    axis.axhline(1.0, color="black", linewidth=0.8)
    axis.set_xticks(list(positions), [r["language"] for r in rows])
    axis.set_ylabel("speedup over greedy")
    axis.set_title("long files: the draft paused where it does not pay, and never paused")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", nargs="+", default=["en", "fr", "de", "ja", "zh", "cs", "ko", "pl"])
    parser.add_argument("--sentences", type=Path, default=languages.SENTENCES)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clips", type=int, default=8, help="short clips bench_languages makes beside each file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--audio-dir", type=Path, default=Path("runs/bench_languages_audio"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--name", default="draft_pause_cpu")
    args = parser.parse_args()
    args.kokoro_voices = None
    torch.set_num_threads(args.threads)
    frozen = languages.frozen_sentences(args.sentences)
    text_hash = hashlib.sha1(json.dumps(frozen, sort_keys=True).encode()).hexdigest()[:8]
    audio_dir = args.audio_dir / f"seed{args.seed}_{args.seconds:.0f}s_{args.clips}clips_{text_hash}"

    from seq2spec import Seq2SeqSpeculator
    from seq2spec.default_models import load_whisper_base
    from seq2spec.whisper.draft import WHISPER_BASE_MULTILINGUAL_DRAFT_DIR, load_whisper_draft
    from seq2spec.whisper.languages import languages_besides_english

    big, processor = load_whisper_base()
    english = load_whisper_draft(big, None)
    others = dict.fromkeys(languages_besides_english(big), str(WHISPER_BASE_MULTILINGUAL_DRAFT_DIR))
    speculator = Seq2SeqSpeculator(big, english, processor, language_drafts=others)
    rows = []
    for code in args.languages:
        sets, _ = languages.audio_sets(code, args, audio_dir)
        audio = sets[0][1][0]  # the long file
        rows.append(measure(big, processor, speculator, code, audio))
        print(json.dumps(rows[-1]), flush=True)
    overall = {
        name: round(sum(r["greedy_s"] for r in rows) / sum(r[f"{name}_s"] for r in rows), 3)
        for name in ("paused", "unpaused")
    }
    header = (
        f"Whisper base, the shipped pair (English draft for en, the multilingual one for the others), each language's "
        f"{args.seconds:.0f}-s long file of held-out sentences and voices, language given, sequential long form; "
        f"{args.threads} CPU threads, {platform.machine()}, torch {torch.__version__}; greedy once, then paused, "
        "unpaused, unpaused, paused (means of two); every transcript identical to greedy's."
    )
    result = {"header": header, "rows": rows, "overall": overall}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(result))
    plot(result, args.out / f"{args.name}.png")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
