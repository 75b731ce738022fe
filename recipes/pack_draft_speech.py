"""Merge the speech of several ``distill_whisper_draft.py --stage data`` runs into one work directory, small enough to
carry to a GPU machine for the encode and train stages (``distill_on_gpu.sh``).

Training clips (``train``, ``train_long``) become Ogg/Opus at 14 kb/s (``opusenc --comp 0``, Debian's opus-tools:
about a twentieth of 16-bit WAV; base labels what it hears, so the draft learns from the same audio it is labelled
on); held-out clips (``heldout``, ``heldout_long``, ``heldout_voices``, ``librivox``) become FLAC, lossless, so their
figures stay comparable with runs on the WAV files; ``asr_samples`` keep their paths in the repository. The manifest's
paths are relative to the directory the recipe runs from, as the other stages expect.

Runs are read in the order given. A held-out split is taken from the first run that has it (runs with the same
``--seed`` speak the same held-out clips); pocketsphinx's real clips, which every run adds, are taken once. A run
stopped before it wrote its manifest gives the clips its audio folders hold, the newest file of each folder left
out (it may be cut short), so hours of speech are not lost to an interrupted run.

    python recipes/pack_draft_speech.py --out runs/draft_gpu runs/draft_classic runs/draft_natural
    tar cf - runs/draft_gpu | split -b 50M - draft_gpu.     # pieces for the transfer
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from distill_whisper_draft import TRAIN_SPLITS  # noqa: E402

HELD_OUT_SPLITS = ("heldout", "heldout_long", "heldout_voices", "librivox")
KEPT_SPLITS = ("asr_samples",)  # files of the repository: referenced where they are
REAL_VOICE = "real"
OPUS_BITRATE_KBPS = 14


def run_records(run: Path) -> list[dict]:
    """A data run's clips: its manifest, or (a run stopped before writing it) its audio folders' finished files."""
    manifest = run / "manifest.jsonl"
    if manifest.is_file():
        return [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = []
    for folder in sorted(p for p in (run / "audio").glob("*") if p.is_dir()):
        split = "train" if folder.name == "train_real" else folder.name
        voice = REAL_VOICE if folder.name == "train_real" else "unknown"
        files = sorted(folder.glob("*.wav"))
        finished = files if folder.name == "train_real" else files[:-1]  # train_real is written whole, first
        records += [{"split": split, "path": str(path), "text": "", "voice": voice} for path in finished]
    return records


def merge(runs: list[Path]) -> list[dict]:
    """Every run's training clips, each held-out split from the first run holding it, real clips and kept files once."""
    merged: list[dict] = []
    held_out_from: dict[str, Path] = {}
    seen: set[str] = set()
    for run in runs:
        for record in run_records(run):
            split = record["split"]
            if split in HELD_OUT_SPLITS and held_out_from.setdefault(split, run) != run:
                continue
            once = record.get("voice") == REAL_VOICE or split in KEPT_SPLITS or split == "librivox"
            key = f"{split}:{Path(record['path']).name}"
            if once and key in seen:
                continue
            seen.add(key)
            merged.append({**record, "source_run": run.name})
    return merged


def opus_writer(source: Path, target: Path) -> None:
    subprocess.run(
        ["opusenc", "--quiet", "--comp", "0", "--bitrate", str(OPUS_BITRATE_KBPS), str(source), str(target)],
        check=True,
    )


def flac_writer(source: Path, target: Path) -> None:
    samples, rate = soundfile.read(source, dtype="int16", always_2d=True)
    soundfile.write(target, samples, rate, format="FLAC")


def convert(record: dict, out: Path, training_writer: Callable[[Path, Path], None]) -> dict:
    """The record with its clip written under ``out`` (training: ``training_writer``; held-out: FLAC)."""
    split, source = record["split"], Path(record["path"])
    if split in KEPT_SPLITS:
        return record
    seconds = soundfile.info(source).duration
    training = split in TRAIN_SPLITS
    suffix = ".opus" if training and training_writer is opus_writer else ".flac"
    target = out / "audio" / split / f"{record['source_run']}_{source.stem}{suffix}"
    if not target.is_file():  # a rerun converts only what is missing
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(target.name + ".tmp")
        (training_writer if training else flac_writer)(source, temporary)
        temporary.replace(target)
    return {**record, "path": str(target), "seconds": round(seconds, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="work directories of --stage data runs")
    parser.add_argument("--out", type=Path, required=True, help="the merged work directory")
    parser.add_argument(
        "--training-format",
        choices=["opus", "flac"],
        default="opus",
        help="training clips as Ogg/Opus (small; needs opusenc) or FLAC (lossless, about 10x larger)",
    )
    parser.add_argument("--workers", type=int, default=2, help="clips converted side by side")
    args = parser.parse_args()
    if args.training_format == "opus" and shutil.which("opusenc") is None:
        sys.exit("opusenc is missing: apt-get install opus-tools (or --training-format flac)")
    missing = [str(run) for run in args.runs if not run.is_dir()]
    if missing:
        sys.exit(f"no such data run: {', '.join(missing)}")
    writer = opus_writer if args.training_format == "opus" else flac_writer
    records = merge(args.runs)
    with ThreadPoolExecutor(args.workers) as pool:
        converted = list(pool.map(lambda record: convert(record, args.out, writer), records))
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = args.out / "manifest.jsonl"
    manifest.with_suffix(".tmp").write_text("".join(json.dumps(r) + "\n" for r in converted), encoding="utf-8")
    manifest.with_suffix(".tmp").replace(manifest)
    totals: dict[str, list[float]] = {}
    for record in converted:
        totals.setdefault(record["split"], []).append(record.get("seconds", 0.0))
    for split, seconds in totals.items():
        print(f"{split}: {len(seconds)} clips, {sum(seconds) / 3600:.2f} h")
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{manifest}: {len(converted)} clips, {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
