"""How ``seq2spec transcribe`` scales with the length of one file: real-time factor and peak memory.

Files of the given lengths are made by repeating ``recipes/data/asr_samples/long_form.wav`` (93 s of synthetic
speech with pauses, so every length has the same speech density); each is transcribed by the command in a fresh
process (the embedded whisper-base and its shipped draft, with ``--timestamps``), as a user would run it. The
real-time factor is the command's own (decoding time over audio time, model loading excluded); peak memory is the
process's maximum resident set size. Writes ``results/long_audio_<device>.{json,md}``.

    python benchmarks/bench_long_audio.py --minutes 1.55 10 60
    python benchmarks/bench_long_audio.py --minutes 1.55 60 --rate 48000 --channels 2
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

SAMPLE = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples" / "long_form.wav"


def make_file(minutes: float, folder: Path, rate: int = 16_000, channels: int = 1) -> Path:
    """``minutes`` of the sample repeated, written as 16-bit PCM at ``rate`` with ``channels`` (each a little
    quieter than the one before), a block at a time."""
    import soxr

    samples, sample_rate = soundfile.read(SAMPLE, dtype="float32")
    if rate != sample_rate:
        samples = soxr.resample(samples, sample_rate, rate).astype(np.float32)
    wanted = int(minutes * 60 * rate)
    path = folder / f"speech_{minutes:g}min_{rate // 1000}k_{channels}ch.wav"
    gains = np.array([0.9**channel for channel in range(channels)], dtype=np.float32)
    with soundfile.SoundFile(path, "w", rate, channels, subtype="PCM_16") as out:
        for start in range(0, wanted, len(samples)):
            block = samples[: min(len(samples), wanted - start)]
            out.write(block[:, None] * gains[None, :])
    return path


def transcribe(path: Path, args: argparse.Namespace) -> dict:
    """One run of the command in its own process: its real-time factor, wall time and peak memory."""
    out = path.with_suffix(".jsonl")
    out.unlink(missing_ok=True)
    command = [sys.executable, "-m", "seq2spec", "transcribe", str(path), "--out", str(out), "--language", "en"]
    command += ["--timestamps", "--threads", str(args.threads), "--device", args.device, "--dtype", args.dtype]
    command += ["--long-form", args.long_form]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    summary = re.search(r"real-time factor ([0-9.]+)", done.stderr)
    record = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    return {
        "audio_s": round(record["duration"], 1),
        "rtf": float(summary.group(1)),
        "wall_s": round(wall, 1),
        "peak_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        "words": len(record["text"].split()),
        "segments": len(record.get("segments", [])),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", nargs="+", type=float, default=[1.55, 10, 60])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--rate", type=int, default=16_000, help="sampling rate of the files made")
    parser.add_argument("--channels", type=int, default=1, help="channels of the files made")
    parser.add_argument("--long-form", default="sequential", choices=["sequential", "batched"])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for minutes in args.minutes:
            # peak memory is per process: measure each length in a fresh child of a fresh interpreter
            child = [sys.executable, __file__, "--single", str(minutes), "--threads", str(args.threads)]
            child += ["--device", args.device, "--dtype", args.dtype, "--folder", folder, "--rate", str(args.rate)]
            child += ["--channels", str(args.channels), "--long-form", args.long_form]
            result = subprocess.run(child, capture_output=True, text=True)
            if result.returncode != 0:
                raise SystemExit(result.stderr[-2000:])
            row = json.loads(result.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(row, flush=True)
    base = rows[0]["rtf"]
    machine = f"{platform.machine()}, {args.threads} threads, {args.device} {args.dtype}"
    files = f"16-bit WAV, {args.rate} Hz, {args.channels} channel(s)"
    lines = [
        f"Machine: {machine}; `seq2spec transcribe --timestamps --long-form {args.long_form}`, embedded "
        f"whisper-base + shipped draft; {files}",
        "",
        "| audio | real-time factor | relative to the shortest | wall s | peak MB | words | segments |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['audio_s'] / 60:.1f} min | {row['rtf']:.3f} | {row['rtf'] / base:.2f} | {row['wall_s']} "
            f"| {row['peak_mb']} | {row['words']} | {row['segments']} |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"long_audio_{'cpu' if args.device == 'cpu' else 'cuda'}"
    if (args.rate, args.channels, args.long_form) != (16_000, 1, "sequential"):
        stem = Path(f"{stem}_{args.rate // 1000}k_{args.channels}ch_{args.long_form}")
    summary = {"machine": machine, "files": files, "long_form": args.long_form, "rows": rows}
    Path(f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n")
    Path(f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def single(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--single", type=float, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--rate", type=int, default=16_000)
    parser.add_argument("--channels", type=int, default=1)
    parser.add_argument("--long-form", default="sequential")
    args = parser.parse_args(argv)
    print(json.dumps(transcribe(make_file(args.single, args.folder, args.rate, args.channels), args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(single(sys.argv[1:]) if "--single" in sys.argv else main())
