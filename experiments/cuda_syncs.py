"""Host synchronisations per round on a CUDA device: every call that makes the host wait for the GPU (a ``.item()``,
a ``.tolist()``, a boolean mask, a copy to the CPU), counted with ``torch.cuda.set_sync_debug_mode("warn")`` while
seq2spec decodes, and the seq2spec source line that caused it. A round is one big decoder forward; each sync
stalls the host until the GPU has drained its queue, so the syncs per round bound how far the host can run ahead.

    python experiments/cuda_syncs.py                         # Whisper base batch 8, the shipped speller batch 16
    python experiments/cuda_syncs.py --dtype bfloat16 --name cuda_syncs_bf16
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
import warnings
from collections import Counter
from pathlib import Path

import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.default_models import load_whisper_base_pair
from seq2spec.whisper.audio import load_audio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_core import DecoderCallCounter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "recipes" / "data" / "asr_samples"
PACKAGE = str(ROOT / "seq2spec")


def count_syncs(run) -> tuple[Counter, int]:
    """``(sync sites, total syncs)`` of ``run()``: each site is the innermost seq2spec frame (file:line) of a
    synchronising call, or "outside seq2spec" when none is on the stack (inside transformers, say)."""
    sites: Counter = Counter()
    original = warnings.showwarning

    def record(message, category, filename, lineno, file=None, line=None):
        frames = [f for f in traceback.extract_stack() if f.filename.startswith(PACKAGE)]
        site = f"{Path(frames[-1].filename).relative_to(ROOT)}:{frames[-1].lineno}" if frames else "outside seq2spec"
        sites[site] += 1

    torch.cuda.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run()
        finally:
            torch.cuda.set_sync_debug_mode("default")
            warnings.showwarning = original
    return sites, sum(sites.values())


def case(name: str, big, run) -> dict:
    run()  # warm-up: lazy initialisation syncs once
    counter = DecoderCallCounter(big)
    sites, total = count_syncs(run)
    rounds = counter.calls
    print(f"{name}: {total} syncs in {rounds} rounds ({total / max(rounds, 1):.2f} per round)")
    for site, count in sites.most_common(8):
        print(f"    {count:6d}  {site}")
    return {"case": name, "syncs": total, "rounds": rounds, "sites": dict(sites.most_common())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="float16", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--name", default="cuda_syncs")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("this benchmark needs a CUDA device")
    dtype = getattr(torch, args.dtype)
    records = []

    big, draft, processor = load_whisper_base_pair(device=args.device, dtype=dtype)
    clips = [load_audio(p) for p in sorted(SAMPLES.glob("clip*.wav"))][:8]
    features = processor.feature_extractor(clips, sampling_rate=16000, return_tensors="pt")["input_features"]
    features = features.to(args.device, dtype)
    speculator = Seq2SeqSpeculator(big, draft, processor)

    def whisper_run():
        speculator.generate(input_features=features, language="en", task="transcribe")

    records.append(case("whisper base, batch 8", big, whisper_run))

    speller = Seq2SeqSpeculator(device=args.device, dtype=dtype)  # as a user gets it: the default proposer
    sources = [
        line.split("\t")[0]
        for line in (ROOT / "recipes" / "data" / "spelling_heldout.tsv").read_text().splitlines()[1:17]
    ]

    def speller_run():
        speller.correct(sources)

    records.append(case("shipped speller, batch 16", speller.big, speller_run))
    args.out.mkdir(parents=True, exist_ok=True)
    machine = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, {args.dtype}"
    (args.out / f"{args.name}.json").write_text(json.dumps({"machine": machine, "cases": records}, indent=2))


if __name__ == "__main__":
    main()
