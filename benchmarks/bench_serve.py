"""``seq2spec serve`` under concurrent clients: throughput and latency of correction and transcription requests.

Starts ``seq2spec serve`` (the shipped speller and the embedded whisper-base with its draft) on a free loopback port
as a user would, then for each number of concurrent clients sends the same requests: one line of text per
``/v2/check`` request (lines from ``recipes/data/real_text``), one short clip per ``/v1/audio/transcriptions``
request (``recipes/data/asr_samples``). Clients = 1 is the requests one at a time. Each answer is checked against the
answer the requests got one at a time (equal, or the run fails); errors and lost requests are counted. Peak memory is
the server process's maximum resident set. Writes ``results/serve_<device>.{json,md,png}``.

    python benchmarks/bench_serve.py --clients 1 8 32 64 --lines 64 --clips 16 --audio-clients 1 8
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import resource
import shlex
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT / "recipes" / "data" / "real_text" / "technical.txt"
CLIPS = ROOT / "recipes" / "data" / "asr_samples"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "seq2spec", "serve", "--port", str(port), "--threads", str(args.threads)]
    command += ["--device", args.device, *shlex.split(args.server_flags)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{url}/health", timeout=2).status_code == 200:
                return server, url
        except requests.ConnectionError:
            time.sleep(0.5)
        if server.poll() is not None:
            raise SystemExit(f"seq2spec serve exited: {server.stderr.read()[-2000:]}")
    raise SystemExit("seq2spec serve did not start")


def check(url: str, line: str) -> str:
    answer = requests.post(f"{url}/v2/check", data={"language": "en-US", "text": line}, timeout=600)
    answer.raise_for_status()
    return json.dumps(answer.json()["matches"], sort_keys=True)


def transcribe(url: str, path: Path) -> str:
    with path.open("rb") as audio:
        answer = requests.post(
            f"{url}/v1/audio/transcriptions",
            files={"file": (path.name, audio)},
            data={"model": "whisper-1"},
            timeout=600,
        )
    answer.raise_for_status()
    return answer.json()["text"]


def run_clients(send, url: str, items: list, clients: int) -> dict:
    """Every item sent once by ``clients`` concurrent clients: throughput, latencies, errors, answers."""
    latencies: list[float] = []
    answers: list[str | None] = [None] * len(items)
    errors = 0

    def one(index: int) -> None:
        nonlocal errors
        started = time.perf_counter()
        try:
            answers[index] = send(url, items[index])
        except Exception:  # noqa: BLE001 - counted
            errors += 1
        latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(len(items))))
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "requests": len(items),
        "wall_s": round(wall, 2),
        "throughput_per_s": round(len(items) / wall, 2),
        "p50_s": round(statistics.median(ordered), 3),
        "p95_s": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
        "errors": errors,
        "answered": sum(answer is not None for answer in answers),
        "answers": answers,
    }


def decoding(url: str, kind: str) -> dict:
    """The server's batcher statistics for ``kind`` (``/health``): batches decoded and seconds spent decoding."""
    batcher = "text" if kind == "correction" else "audio"
    return requests.get(f"{url}/health", timeout=10).json()["batches"][batcher]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--audio-clients", type=int, nargs="*", default=[1, 8], help="none: no transcription")
    parser.add_argument("--lines", type=int, default=64)
    parser.add_argument("--clips", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--server-flags", default="", help="more flags for seq2spec serve, as one string")
    parser.add_argument("--name", help="results file stem (default serve_cpu or serve_cuda)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    lines = [line for line in TEXT.read_text(encoding="utf-8").splitlines() if line.strip()][: args.lines]
    clips = sorted(CLIPS.glob("clip*.wav"))[: args.clips]
    server, url = start_server(args)
    rows = []
    try:
        check(url, "Warm up teh speller.")
        if args.audio_clients:
            transcribe(url, clips[0])
        for kind, send, items, counts in (
            ("correction", check, lines, args.clients),
            ("transcription", transcribe, clips, args.audio_clients),
        ):
            reference = None
            for clients in counts:
                before = decoding(url, kind)
                row = run_clients(send, url, items, clients)
                after = decoding(url, kind)
                row["batches"] = after["batches"] - before["batches"]
                row["decode_s"] = round(after["decode_seconds"] - before["decode_seconds"], 2)
                answers = row.pop("answers")
                reference = reference or answers
                row["identical"] = answers == reference
                rows.append({"kind": kind, **row})
                print(rows[-1], flush=True)
    finally:
        server.terminate()
        server.wait(timeout=600)
    peak_mb = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, server --threads {args.threads}, {args.device}"
    table = [
        f"Machine: {machine}; `seq2spec serve` defaults (shipped speller, whisper-base + shipped draft)"
        f"{', server flags ' + args.server_flags if args.server_flags else ''}; loopback clients; server peak RSS "
        f"{peak_mb} MB",
        "",
        "| requests | concurrent clients | count | wall s | requests/s | vs one at a time | p50 s | p95 s | errors | "
        "answered | identical to one at a time | batches | decoding s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        base = next(r for r in rows if r["kind"] == row["kind"] and r["clients"] == 1)["throughput_per_s"]
        table.append(
            f"| {row['kind']} | {row['clients']} | {row['requests']} | {row['wall_s']} | {row['throughput_per_s']} | "
            f"{row['throughput_per_s'] / base:.2f} | {row['p50_s']} | {row['p95_s']} | {row['errors']} | "
            f"{row['answered']} | {'yes' if row['identical'] else 'no'} | {row['batches']} | {row['decode_s']} |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / (args.name or f"serve_{'cpu' if args.device == 'cpu' else 'cuda'}")
    record = {"machine": machine, "server_flags": args.server_flags, "peak_mb": peak_mb, "rows": rows}
    Path(f"{stem}.json").write_text(json.dumps(record, indent=2) + "\n")
    Path(f"{stem}.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    plot(rows, Path(f"{stem}.png"))
    return 0


def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    figure, axis = plt.subplots(figsize=(6, 4))
    for kind in ("correction", "transcription"):
        mine = [row for row in rows if row["kind"] == kind]
        axis.plot([r["clients"] for r in mine], [r["throughput_per_s"] for r in mine], marker="o", label=kind)
    axis.set_xscale("log", base=2)
    axis.set_xlabel("concurrent clients")
    axis.set_ylabel("requests per second")
    axis.set_title("seq2spec serve on loopback")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
