"""Long recordings: Whisper's sequential long form against the batched long form (speech found by Silero VAD, joined
into pieces of at most 30 s with the pauses left out, the pieces decoded together) and the peers that batch a file's
pieces.

Each system runs in a process of its own (model loading excluded from its time; peak resident memory is the
process's), on files made by repeating a sample whole (``--sample``; by default
``recipes/data/asr_samples/long_form.wav``, 93 s of synthetic speech in several voices with pauses), so the
reference is its transcript repeated. Systems:

- ``greedy sequential``: whisper-base's own ``generate`` long form (the reference for speed);
- ``seq2spec sequential`` / ``seq2spec batched bN``: ``Seq2SeqSpeculator.transcribe(long_form=...)`` with the
  shipped draft, the batched mode given the file's path (it reads the file piece by piece); ``seq2spec sequential
  vad``: the sequential long form on the speech alone (``long_form="vad"``); ``seq2spec int8 ...``: the same in the int8
  mode;
- ``faster-whisper batched int8/float32 bN``: its ``BatchedInferencePipeline`` (Silero VAD, pieces batched),
  greedy, on the same weights;
- ``hf chunked pipeline bN``: transformers' speech-recognition pipeline, 30-s windows with 5-s overlaps batched.

    python benchmarks/bench_long_form.py --copies 7          # about 11 minutes of audio
    python benchmarks/bench_long_form.py --copies 39 --systems "greedy sequential" "seq2spec batched b16"
    python benchmarks/bench_long_form.py --sample natural_long_form.wav --copies 3 --name long_form_natural_cpu
    python benchmarks/bench_long_form.py --device cuda --dtype float16 --name long_form_cuda   # the GPU list

On CUDA each system first transcribes the file's first minute untimed (kernels chosen and compiled), the times
are device-synchronised and each row also records torch's peak GPU memory (``peak_gpu_mb``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "recipes" / "data" / "asr_samples" / "long_form.wav"
SYSTEMS = [
    "greedy sequential",
    "seq2spec sequential",
    "seq2spec sequential vad",
    "seq2spec batched b1",
    "seq2spec batched b4",
    "seq2spec batched b8",
    "seq2spec batched b16",
    "seq2spec int8 sequential",
    "seq2spec int8 batched b4",
    "seq2spec int8 batched b8",
    "seq2spec int8 batched b16",
    "faster-whisper batched int8 b8",
    "faster-whisper batched float32 b8",
    "faster-whisper batched int8 b16",
    "faster-whisper batched float32 b16",
    "seq2spec batched b32",
    "faster-whisper batched float16 b8",
    "faster-whisper batched float16 b16",
    "faster-whisper batched float16 b32",
    "hf chunked pipeline b8",
    "hf chunked pipeline b16",
    "hf chunked pipeline b32",
]
# on a CPU (the GPU list adds the larger batches and the chunked pipeline, which took 300 s for 93 s of audio on
# this 2-core CPU)
CPU_SYSTEMS = [
    "greedy sequential",
    "seq2spec sequential",
    "seq2spec sequential vad",
    "seq2spec batched b4",
    "seq2spec batched b8",
    "seq2spec batched b16",
    "seq2spec int8 batched b8",
    "seq2spec int8 batched b16",
    "faster-whisper batched int8 b8",
    "faster-whisper batched float32 b8",
    "faster-whisper batched int8 b16",
    "faster-whisper batched float32 b16",
]


# on a GPU (--device cuda --dtype float16): the comparison at the same batch sizes
GPU_SYSTEMS = [
    "greedy sequential",
    "seq2spec sequential",
    *(f"{system} b{batch}" for batch in (8, 16, 32)
      for system in ("seq2spec batched", "faster-whisper batched float16", "hf chunked pipeline")),
]  # fmt: skip


def make_file(copies: int, folder: Path, sample: Path = SAMPLE) -> Path:
    samples, rate = soundfile.read(sample, dtype="int16")
    path = folder / f"{sample.stem}_{copies}x.wav"
    soundfile.write(path, np.tile(samples, copies), rate, subtype="PCM_16")
    return path


def batch_of(system: str) -> int:
    return int(system.rsplit(" b", 1)[1]) if " b" in system and system.rsplit(" b", 1)[1].isdigit() else 1


def run_system(system: str, path: Path, device: str = "cpu", dtype_name: str = "float32") -> dict:
    """The child: load, transcribe ``path`` once on ``device`` (float systems in ``dtype_name``), report seconds,
    text and peak memory."""
    import torch

    dtype = getattr(torch, dtype_name)
    synchronize = torch.cuda.synchronize if device.startswith("cuda") else lambda: None

    sys.path.insert(0, str(HERE))
    from bench_asr import LANGUAGE, ChunkedPipeline, ct2_base_dir

    from seq2spec import Seq2SeqSpeculator
    from seq2spec.default_models import load_whisper_base, load_whisper_base_pair
    from seq2spec.whisper.audio import load_audio

    batched = "seq2spec" in system and ("batched" in system or system.endswith(" vad"))
    audio = None if batched else load_audio(path)  # the batched long form reads the file itself, piece by piece
    audio_seconds = soundfile.info(str(path)).duration
    batch = batch_of(system)
    if system.startswith("faster-whisper"):
        from faster_whisper import BatchedInferencePipeline, WhisperModel

        compute_type = system.split()[2]
        model = WhisperModel(str(ct2_base_dir()), device=device.split(":")[0], compute_type=compute_type,
                             cpu_threads=torch.get_num_threads())  # fmt: skip
        pipeline = BatchedInferencePipeline(model)

        def transcribe(source=audio) -> str:
            segments, _ = pipeline.transcribe(
                source, batch_size=batch, beam_size=1, best_of=1, temperature=0.0, condition_on_previous_text=False,
                **LANGUAGE,
            )  # fmt: skip
            return " ".join(segment.text.strip() for segment in segments)
    elif system.startswith("hf chunked"):
        big, processor = load_whisper_base(device=device, dtype=dtype)
        pipe = ChunkedPipeline(big, processor, batch)

        def transcribe(source=audio) -> str:
            return pipe([source])[0]
    elif system == "greedy sequential":
        big, processor = load_whisper_base(device=device, dtype=dtype)

        def features_of(source):
            return processor.feature_extractor(
                source, sampling_rate=16000, return_tensors="pt", truncation=False, padding="longest",
                return_attention_mask=True,
            )  # fmt: skip

        file_features = features_of(audio)  # outside the timed call, as in every greedy figure

        def transcribe(source=None) -> str:
            features = file_features if source is None else features_of(source)
            with torch.inference_mode():
                ids = big.generate(
                    features["input_features"].to(device, dtype), attention_mask=features["attention_mask"].to(device),
                    return_timestamps=True, **LANGUAGE,
                )  # fmt: skip
            return processor.batch_decode(ids, skip_special_tokens=True)[0].strip()
    else:
        speculator = Seq2SeqSpeculator(
            *load_whisper_base_pair(device=device, dtype="int8" if " int8 " in system else dtype)
        )
        long_form = "batched" if "batched" in system else "vad" if system.endswith(" vad") else "sequential"

        def transcribe(source=str(path) if batched else audio) -> str:
            return speculator.transcribe(source, sampling_rate=16000, long_form=long_form, batch_size=batch,
                                         **LANGUAGE)  # fmt: skip

    if device.startswith("cuda"):  # the warm-up: the same system on the file's first minute
        warm_path = Path(tempfile.mkdtemp()) / "warm_up.wav"
        samples, rate = soundfile.read(str(path), frames=60 * soundfile.info(str(path)).samplerate, dtype="int16")
        soundfile.write(warm_path, samples, rate, subtype="PCM_16")
        transcribe(str(warm_path) if batched else load_audio(warm_path))
    synchronize()
    started = time.perf_counter()
    text = transcribe()
    synchronize()
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row = {"system": system, "seconds": seconds, "text": text, "peak_mb": peak, "audio_seconds": audio_seconds}
    if device.startswith("cuda"):
        row["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20  # torch's own (faster-whisper's is not seen)
        row["gpu"] = torch.cuda.get_device_name()
    return row


def markdown(record: dict) -> str:
    gpu = all("peak_gpu_mb" in row for row in record["rows"].values()) and bool(record["rows"])
    rows = [
        f"{record['audio_seconds'] / 60:.1f} min of audio ({record['copies']} copies of "
        f"{record.get('sample', 'long_form.wav')}), "
        f"{record['threads']} CPU threads, {record['machine']}"
        + (f", {record['device']} in {record['dtype']}" if record.get("device", "cpu") != "cpu" else "")
        + (f" ({record['gpu']})" if record.get("gpu") else ""),
        "",
        "| system | seconds | real-time factor | speedup vs greedy sequential | WER | peak MB |"
        + (" peak GPU MB |" if gpu else ""),
        "|---|---:|---:|---:|---:|---:|" + ("---:|" if gpu else ""),
    ]
    base = record["rows"].get("greedy sequential", {}).get("seconds")
    for system, row in record["rows"].items():
        speedup = f"{base / row['seconds']:.2f}" if base else ""
        rows.append(
            f"| {system} | {row['seconds']:.2f} | {row['seconds'] / record['audio_seconds']:.4f} | {speedup} | "
            f"{row['wer']:.4f} | {row['peak_mb']:.0f} |" + (f" {row['peak_gpu_mb']:.0f} |" if gpu else "")
        )
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=7, help="copies of the sample in the file")
    parser.add_argument(
        "--sample", type=Path, default=SAMPLE,
        help="the recording to repeat (default: long_form.wav, 93 s); its transcript is in references.tsv beside it "
        "or in a .txt of the same name",
    )  # fmt: skip
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, help="default: the CPU list, or on CUDA the GPU list")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"],
                        help="of the float systems (default: float32)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--name", default="long_form_cpu")
    parser.add_argument("--child", nargs=2, metavar=("SYSTEM", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        import torch

        from seq2spec.memory import retain_freed_memory

        torch.set_num_threads(args.threads)
        retain_freed_memory()  # as the commands do: no page faults on buffers reused every call
        print(json.dumps(run_system(args.child[0], Path(args.child[1]), args.device, args.dtype)))
        return 0
    systems = args.systems or (GPU_SYSTEMS if args.device.startswith("cuda") else CPU_SYSTEMS)

    sys.path.insert(0, str(HERE))
    from bench_asr import reference_text, word_error_rate

    transcript = args.sample.with_suffix(".txt")
    one = transcript.read_text(encoding="utf-8").strip() if transcript.is_file() else reference_text(args.sample)
    if one is None:
        parser.error(f"{args.sample}: no transcript (a .txt beside it, or a line in references.tsv)")
    reference = " ".join([one] * args.copies)
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"copies": args.copies, "sample": args.sample.name, "threads": args.threads, "device": args.device,
              "dtype": args.dtype,
              "machine": platform.processor() or platform.machine(), "rows": {}}  # fmt: skip
    environment = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    with tempfile.TemporaryDirectory() as folder:
        path = make_file(args.copies, Path(folder), args.sample)
        for system in systems:
            command = [sys.executable, __file__, "--child", system, str(path), "--threads", str(args.threads),
                       "--device", args.device, "--dtype", args.dtype]  # fmt: skip
            done = subprocess.run(command, env=environment, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{system} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["wer"] = word_error_rate(reference, row["text"])
            record["audio_seconds"] = row["audio_seconds"]
            if "gpu" in row:
                record["gpu"] = row["gpu"]
            record["rows"][system] = row
            print(f"{system}: {row['seconds']:.1f} s, WER {row['wer']:.4f}, peak {row['peak_mb']:.0f} MB",
                  file=sys.stderr)  # fmt: skip
            (args.out / f"{args.name}.json").write_text(json.dumps(record, indent=2))  # after every row
            (args.out / f"{args.name}.md").write_text(markdown(record))
    print(markdown(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
