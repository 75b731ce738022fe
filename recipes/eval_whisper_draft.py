"""Whisper drafts side by side on speech none of them trained on: teacher-forced agreement with base and tokens per
big row-forward, on short clips decoded in batches and on a long recording decoded long-form.

For each draft folder (``--drafts``; the shipped one is ``seq2spec/assets/whisper_base_draft``), with Whisper base
in float32 on the CPU:

- teacher-forced agreement: the draft's next token against base's greedy next token along base's own transcript
  (``distill_whisper_draft.agreement_on``), on the short clips (labels without timestamps) and on the long file cut
  into 30-s windows (labels with timestamps, as long-form decoding writes them);
- tokens per big row-forward and acceptance of ``Seq2SeqSpeculator(base, draft).transcribe``: the short clips at
  ``--batch-size``, the long file in the sequential long form and in the batched long form;
- whether every transcript equals base's greedy one (``big.generate`` on the same batches; the long file through
  ``generate``'s long form), and the wall time of each (one run; ``bench_asr.py`` measures speed properly).

The clips are ``make_evaluation_voice_clips.py``'s, the long file ``make_natural_long_form.py``'s: Kokoro's six
evaluation voices, which no draft may train or be tuned on.

    python recipes/eval_whisper_draft.py --drafts seq2spec/assets/whisper_base_draft runs/whisper_draft/export \\
        --clips ~/.cache/seq2spec/evaluation_voice_clips --long-file ~/.cache/seq2spec/natural_long_form.wav \\
        --out benchmarks/results/whisper_drafts_evaluation_voices
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import soundfile
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import distill_whisper_draft as distill  # noqa: E402

from seq2spec import Seq2SeqSpeculator  # noqa: E402
from seq2spec.default_models import load_whisper_base  # noqa: E402
from seq2spec.whisper.draft import load_whisper_draft  # noqa: E402

WINDOW = 30 * distill.RATE
LANGUAGE = {"language": "en", "task": "transcribe"}


def clip_paths(folder: Path) -> list[Path]:
    lines = (folder / "references.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return [folder / line.split("\t", 1)[0] for line in lines]


def encoded_set(big, processor, paths: list[Path], timestamps: bool, folder: Path) -> distill.EncodedSet:
    """Base's encoder output, greedy labels and top-k for ``paths``, as the distillation recipe keeps them."""
    folder.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(paths), 16):
        records = [{"path": str(path)} for path in paths[start : start + 16]]
        chunk = distill.encode_chunk(big, processor, records, [timestamps] * len(records), 16, 224)
        torch.save(chunk, folder / f"{start:06d}.pt")
    return distill.EncodedSet(folder)


def long_file_windows(path: Path, folder: Path) -> list[Path]:
    """The long file cut into consecutive 30-s windows (the last one shorter), written as WAV files."""
    samples, rate = soundfile.read(path, dtype="float32")
    if rate != distill.RATE:
        raise ValueError(f"{path}: {rate} Hz; the long file must be 16 kHz")
    folder.mkdir(parents=True, exist_ok=True)
    windows = []
    for index, start in enumerate(range(0, len(samples), WINDOW)):
        window = folder / f"{index:03d}.wav"
        soundfile.write(window, samples[start : start + WINDOW], distill.RATE)
        windows.append(window)
    return windows


@torch.inference_mode()
def greedy_texts(big, processor, paths: list[Path], batch_size: int) -> list[str]:
    texts = []
    for start in range(0, len(paths), batch_size):
        audio = [soundfile.read(p, dtype="float32")[0] for p in paths[start : start + batch_size]]
        features = processor.feature_extractor(audio, sampling_rate=distill.RATE, return_tensors="pt").input_features
        texts += [
            t.strip() for t in processor.batch_decode(big.generate(features, **LANGUAGE), skip_special_tokens=True)
        ]
    return texts


@torch.inference_mode()
def greedy_long_form(big, processor, path: Path) -> str:
    samples, _ = soundfile.read(path, dtype="float32")
    features = processor.feature_extractor(samples, sampling_rate=distill.RATE, return_tensors="pt",
                                           truncation=False, padding="longest", return_attention_mask=True)  # fmt: skip
    ids = big.generate(features.input_features, attention_mask=features.attention_mask, return_timestamps=True,
                       **LANGUAGE)  # fmt: skip
    return processor.batch_decode(ids, skip_special_tokens=True)[0].strip()


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def speculation_row(speculator: Seq2SeqSpeculator, run, reference=None) -> dict:
    """The run's statistics and time; with a ``reference``, whether its result equals it."""
    result, seconds = timed(run)
    stats = speculator.last_stats
    row = {
        "tokens_per_big_row_forward": round(stats.tokens_per_big_forward, 3),
        "acceptance": round(stats.acceptance_rate, 3),
        "seconds": round(seconds, 2),
    }
    if reference is not None:
        row["identical_to_greedy"] = result == reference
    return row


def evaluate(args) -> dict:
    torch.set_num_threads(args.threads)
    big, processor = load_whisper_base()
    big.eval()
    pad_id = big.generation_config.eos_token_id
    clips = clip_paths(args.clips)
    with tempfile.TemporaryDirectory() as work:
        short = encoded_set(big, processor, clips, False, Path(work) / "short")
        windows = long_file_windows(args.long_file, Path(work) / "windows")
        long = encoded_set(big, processor, windows, True, Path(work) / "long")
    reference_short, greedy_short_s = timed(lambda: greedy_texts(big, processor, clips, args.batch_size))
    reference_long, greedy_long_s = timed(lambda: greedy_long_form(big, processor, args.long_file))
    record = {
        "clips": len(clips),
        "clip_seconds": round(sum(soundfile.info(str(p)).duration for p in clips), 1),
        "long_file": args.long_file.name,
        "long_seconds": round(soundfile.info(str(args.long_file)).duration, 1),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "greedy_seconds": {"short": round(greedy_short_s, 2), "long": round(greedy_long_s, 2)},
        "drafts": {},
    }
    for folder in args.drafts:
        draft = load_whisper_draft(big, folder)
        speculator = Seq2SeqSpeculator(big, draft, processor)
        row = {
            "agreement_short": round(distill.agreement_on(draft, short, pad_id)[0], 4),
            "agreement_long_windows": round(distill.agreement_on(draft, long, pad_id)[0], 4),
            "short": speculation_row(
                speculator,
                lambda s=speculator: [
                    t.strip() for t in s.transcribe([str(p) for p in clips], batch_size=args.batch_size, language="en")
                ],  # fmt: skip
                reference_short,
            ),
            "long_sequential": speculation_row(
                speculator, lambda s=speculator: s.transcribe(str(args.long_file), language="en"), reference_long
            ),
            "long_batched": speculation_row(  # pieces of the speech alone: not generate's long form, no reference
                speculator,
                lambda s=speculator: s.transcribe(
                    str(args.long_file), language="en", long_form="batched", batch_size=args.batch_size
                ),  # fmt: skip
            ),
        }
        record["drafts"][str(folder)] = row
        print(json.dumps({str(folder): row}), file=sys.stderr)
    return record


def markdown(record: dict) -> str:
    lines = [
        f"{record['clips']} short clips ({record['clip_seconds']} s) at batch {record['batch_size']} and "
        f"{record['long_file']} ({record['long_seconds']} s); whisper-base float32, {record['threads']} CPU threads",
        "",
        "| draft | agreement short | agreement long windows | tokens/big row-forward short | acceptance short | "
        "tokens/big row-forward long sequential | acceptance long | tokens/big row-forward long batched | "
        "identical short / long |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, row in record["drafts"].items():
        short, long, batched = row["short"], row["long_sequential"], row["long_batched"]
        same = f"{'yes' if short['identical_to_greedy'] else 'NO'} / {'yes' if long['identical_to_greedy'] else 'NO'}"
        lines.append(
            f"| {name} | {row['agreement_short']:.3f} | {row['agreement_long_windows']:.3f} | "
            f"{short['tokens_per_big_row_forward']:.2f} | {short['acceptance']:.3f} | "
            f"{long['tokens_per_big_row_forward']:.2f} | {long['acceptance']:.3f} | "
            f"{batched['tokens_per_big_row_forward']:.2f} | {same} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drafts", nargs="+", type=Path, required=True, help="draft folders to compare")
    parser.add_argument("--clips", type=Path, required=True, help="make_evaluation_voice_clips.py's folder")
    parser.add_argument("--long-file", type=Path, required=True, help="a 16-kHz recording over 30 s")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True, help="stem of the .json and .md written")
    args = parser.parse_args()
    record = evaluate(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(record), encoding="utf-8")
    print(markdown(record))


if __name__ == "__main__":
    main()
