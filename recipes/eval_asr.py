"""Speech recognition: WER/CER and speed of speculative decoding against plain greedy ``big.generate``.

Input: an audio folder with a references file (TSV ``file<TAB>text``, with a header; ``file`` relative to the
folder), or a local audio dataset readable by ``datasets.load_dataset("audiofolder", data_dir=...)`` whose
``metadata.csv`` has a ``transcription`` (or ``text``) column. Text is normalised before scoring: Whisper's English
normaliser when the language is English (or not given), its basic normaliser otherwise.

Both decodings get the same batches and features; the recipe reports WER and CER for each, the share of
identical transcripts (it must be 100%: differing files are listed and the exit status is 1), the real-time factor
of each and the speedup. Writes ``<out>/<name>.json``, ``.md`` and ``.png``. With no arguments: the embedded
Whisper base on the shipped synthetic samples (``recipes/data/asr_samples``).

    python recipes/eval_asr.py
    python recipes/eval_asr.py my_audio/ --references refs.tsv --model openai/whisper-large-v3 \\
        --draft distil-whisper/distil-large-v3 --language en
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import torch
from metrics import error_counts, text_normalizer

from seq2spec import Seq2SeqSpeculator
from seq2spec.memory import retain_freed_memory
from seq2spec.whisper.audio import SAMPLING_RATE, load_audio
from seq2spec.whisper.transcription import transcribe_clips

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"  # where reports go by default

DEFAULT_FOLDER = Path(__file__).resolve().parent / "data" / "asr_samples"


def load_references(folder: Path, references: Path | None) -> tuple[list[str], list, list[str]]:
    """(names, 16 kHz clips, reference texts) from a folder and its TSV, or from an audiofolder dataset."""
    tsv = references or folder / "references.tsv"
    if tsv.exists():
        with open(tsv, encoding="utf-8", newline="") as handle:
            rows = [row for row in csv.reader(handle, delimiter="\t") if row]
        if rows and rows[0][:2] == ["file", "text"]:
            rows = rows[1:]
        names = [row[0] for row in rows]
        return names, [load_audio(folder / name) for name in names], [row[1] for row in rows]
    return read_audio_folder(folder)


def read_audio_folder(folder: Path) -> tuple[list[str], list, list[str]]:
    """A Hugging Face audiofolder: clips beside a ``metadata.csv`` or ``metadata.jsonl`` whose ``file_name`` column
    names them and whose ``transcription`` (or ``text``) column holds the references. datasets reads the metadata;
    soundfile reads the audio (datasets' own audio decoding needs torchcodec, which a CPU build of torch lacks)."""
    from datasets import load_dataset

    metadata = next((folder / name for name in ("metadata.csv", "metadata.jsonl") if (folder / name).is_file()), None)
    if metadata is None:
        raise SystemExit(f"{folder}: no references.tsv and no audiofolder metadata (metadata.csv or metadata.jsonl)")
    loader = "csv" if metadata.suffix == ".csv" else "json"
    dataset = load_dataset(loader, data_files=str(metadata), split="train")
    column = "transcription" if "transcription" in dataset.column_names else "text"
    if "file_name" not in dataset.column_names or column not in dataset.column_names:
        raise SystemExit(f"{metadata}: expected a 'file_name' and a 'transcription' or 'text' column")
    names = [str(name) for name in dataset["file_name"]]
    texts = ["" if text is None else str(text) for text in dataset[column]]
    return names, [load_audio(folder / name) for name in names], texts


def scores(references: list[str], hypotheses: list[str], normalise) -> dict:
    refs = [normalise(r) for r in references]
    hyps = [normalise(h) for h in hypotheses]
    return {"wer": error_counts(refs, hyps, "word").rate, "cer": error_counts(refs, hyps, "char").rate}


def markdown(report: dict) -> str:
    g, s = report["greedy"], report["speculative"]
    return (
        "\n".join(
            [
                f"{report['files']} files, {report['audio_seconds']:.0f} s of audio from `{report['data']}`; model "
                f"`{report['model']}`, draft `{report['draft']}`, batch size {report['batch_size']}",
                "",
                "| | greedy | seq2spec |",
                "|---|---:|---:|",
                f"| WER | {g['wer']:.4f} | {s['wer']:.4f} |",
                f"| CER | {g['cer']:.4f} | {s['cer']:.4f} |",
                f"| wall time, s | {g['seconds']:.2f} | {s['seconds']:.2f} |",
                f"| real-time factor | {g['rtf']:.3f} | {s['rtf']:.3f} |",
                f"| speedup over greedy | 1.00 | {report['speedup']:.2f} |",
                f"| acceptance rate | | {s['acceptance_rate']:.3f} |",
                f"| transcripts identical to greedy | | {report['identical_share']:.1%} |",
            ]
        )
        + "\n"
    )


def plot(report: dict, path: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed (pip install 'seq2spec[bench]'): no chart written", file=sys.stderr)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3.4))
    names = ["greedy", "seq2spec"]
    colours = ["tab:blue", "tab:orange"]
    left.bar(names, [report["greedy"]["wer"], report["speculative"]["wer"]], color=colours)
    left.set_title("WER (normalised)")
    right.bar(names, [report["greedy"]["rtf"], report["speculative"]["rtf"]], color=colours)
    right.set_title(f"real-time factor (x{report['speedup']:.2f} faster)")
    figure.suptitle(f"{report['files']} files, identical transcripts: {report['identical_share']:.0%}", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--references", type=Path, help="TSV file<TAB>text (default: FOLDER/references.tsv)")
    parser.add_argument("--model", help="Whisper name or path (default: the embedded whisper-base)")
    parser.add_argument(
        "--draft",
        help="draft/assistant model name or path, or 'none' (default: the shipped draft with the embedded base)",
    )
    parser.add_argument("--language", default="en", help="language code, or 'auto' to detect per file")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="asr")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    retain_freed_memory()  # as the commands do: no page faults on buffers reused every call

    names, clips, references = load_references(args.folder, args.references)
    if args.limit:
        names, clips, references = names[: args.limit], clips[: args.limit], references[: args.limit]
    draft = None if args.draft == "none" else args.draft
    if args.model:
        speculator = Seq2SeqSpeculator(args.model, draft)
    else:
        from seq2spec.default_models import load_whisper_base
        from seq2spec.whisper.draft import WHISPER_BASE_DRAFT_DIR, load_whisper_draft

        big, processor = load_whisper_base()
        if args.draft is None and WHISPER_BASE_DRAFT_DIR.is_dir():
            draft = load_whisper_draft(big)  # the shipped distilled draft
            args.draft = "shipped whisper-base draft"
        speculator = Seq2SeqSpeculator(big, draft, processor)
    big, processor = speculator.big, speculator.processor
    language = None if args.language == "auto" else args.language
    options = {
        "multilingual": bool(getattr(big.generation_config, "is_multilingual", False)),
        "language": language,
        "batch_size": args.batch_size,
    }

    def greedy_generate(input_features, attention_mask, **kwargs):
        with torch.inference_mode():
            return big.generate(input_features.to(big.device, big.dtype), attention_mask=attention_mask, **kwargs)

    transcribe_clips(clips[:1], processor, greedy_generate, **options)  # warm-up
    print(f"greedy decoding of {len(clips)} files ...", file=sys.stderr)
    started = time.perf_counter()
    greedy = transcribe_clips(clips, processor, greedy_generate, progress=True, **options)
    greedy_seconds = time.perf_counter() - started
    print("seq2spec decoding ...", file=sys.stderr)
    started = time.perf_counter()
    speculative = speculator.transcribe(
        clips, sampling_rate=SAMPLING_RATE, language=language, batch_size=args.batch_size, progress=True
    )
    speculative_seconds = time.perf_counter() - started
    stats = speculator.last_stats

    normalise = text_normalizer(language)
    audio_seconds = sum(len(c) for c in clips) / SAMPLING_RATE
    differing = [i for i, (a, b) in enumerate(zip(greedy, speculative, strict=True)) if a != b]
    report = {
        "data": str(args.folder),
        "files": len(clips),
        "audio_seconds": audio_seconds,
        "model": args.model or "embedded whisper-base",
        "draft": args.draft or "none",
        "batch_size": args.batch_size,
        "greedy": {
            **scores(references, greedy, normalise),
            "seconds": greedy_seconds,
            "rtf": greedy_seconds / audio_seconds,
        },
        "speculative": {
            **scores(references, speculative, normalise),
            "seconds": speculative_seconds,
            "rtf": speculative_seconds / audio_seconds,
            "acceptance_rate": stats.acceptance_rate,
            "tokens_per_big_forward": stats.tokens_per_big_forward,
        },
        "speedup": greedy_seconds / speculative_seconds if speculative_seconds else 0.0,
        "identical_share": 1 - len(differing) / max(1, len(clips)),
        "differing": [{"file": names[i], "greedy": greedy[i], "seq2spec": speculative[i]} for i in differing],
        "transcripts": [
            {"file": n, "reference": r, "greedy": g} for n, r, g in zip(names, references, greedy, strict=True)
        ],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    table = markdown(report)
    (args.out / f"{args.name}.md").write_text(table)
    plot(report, args.out / f"{args.name}.png")
    print(table)
    if differing:
        for item in report["differing"][:10]:
            print(f"DIFFERS in {item['file']}: greedy {item['greedy']!r} vs seq2spec {item['seq2spec']!r}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
