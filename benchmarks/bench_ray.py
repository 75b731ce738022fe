"""Wall time of the same job locally and through Ray Data with 1 and 2 actors (``--ray``), on this machine.

Jobs: ``seq2spec transcribe`` over recipes/data/asr_samples (embedded whisper-base and its shipped draft) and
``seq2spec correct`` over the sources of recipes/data/spelling_heldout.tsv (the shipped speller). Each run starts
from an empty output; the Ray runs include starting the actors and loading the models in them (not starting Ray
itself, which happens once before). Results must equal the local command's; the table goes to
``benchmarks/results/ray_cpu.md``.

    python benchmarks/bench_ray.py [--cpus 2] [--lines 800]
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "recipes" / "data" / "asr_samples"
PAIRS = ROOT / "recipes" / "data" / "spelling_heldout.tsv"


def timed(argv: list[str]) -> float:
    from seq2spec.commands.main import main

    start = time.perf_counter()
    code = main(argv)
    if code not in (0, 1):
        raise SystemExit(f"{argv} exited {code}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance and local torch threads")
    parser.add_argument("--lines", type=int, default=800, help="lines to correct")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    import ray
    import torch

    from seq2spec.commands.ray_cluster import read_records

    torch.set_num_threads(args.cpus)
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    work = Path(tempfile.mkdtemp(prefix="bench_ray_"))
    with open(PAIRS, encoding="utf-8", newline="") as handle:
        sources = [row[0] for row in list(csv.reader(handle, delimiter="\t"))[1 : args.lines + 1]]
    text = work / "lines.txt"
    text.write_text("\n".join(sources) + "\n", encoding="utf-8")
    rows = []

    local_jsonl = work / "local.jsonl"
    seconds = timed(["transcribe", str(AUDIO), "--language", "en", "--out", str(local_jsonl)])
    local = {r["file"]: r["text"] for r in map(json.loads, local_jsonl.read_text().splitlines())}
    rows.append(("transcribe", "local", seconds, True))
    for actors in (1, 2):
        out = work / f"ray_transcribe_{actors}"
        cpus = str(args.cpus / actors)
        argv = ["transcribe", str(AUDIO), "--language", "en", "--ray", "--num-actors", str(actors)]
        seconds = timed([*argv, "--cpus-per-actor", cpus, "--out", str(out)])
        remote = {r["file"]: r["text"] for r in read_records(out)}
        rows.append(("transcribe", f"ray, {actors} actor(s) x {cpus} CPU", seconds, remote == local))

    local_txt = work / "local.txt"
    seconds = timed(["correct", str(text), "--out", str(local_txt)])
    local_lines = local_txt.read_text(encoding="utf-8").splitlines()
    rows.append(("correct", "local", seconds, True))
    for actors in (1, 2):
        out = work / f"ray_correct_{actors}"
        cpus = str(args.cpus / actors)
        argv = ["correct", str(text), "--ray", "--num-actors", str(actors), "--cpus-per-actor", cpus]
        seconds = timed([*argv, "--chunk-size", "200", "--out", str(out)])
        remote = [r["text"] for r in sorted(read_records(out), key=lambda r: r["line"])]
        rows.append(("correct", f"ray, {actors} actor(s) x {cpus} CPU", seconds, remote == local_lines))
    ray.shutdown()

    clips = len(local)
    lines = [
        f"{args.cpus}-CPU machine; transcribe: {clips} files of recipes/data/asr_samples (130 s of audio); "
        f"correct: {len(sources)} lines",
        "",
        "| job | how | wall s | ratio to local | same results as local |",
        "|---|---|---:|---:|---|",
    ]
    local_seconds = {job: s for job, how, s, _ in rows if how == "local"}
    for job, how, seconds, same in rows:
        ratio = seconds / local_seconds[job]
        lines.append(f"| {job} | {how} | {seconds:.1f} | {ratio:.2f} | {'yes' if same else 'NO'} |")
    table = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ray_cpu.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
