"""Where the time goes: greedy and seq2spec on the embedded Whisper base and on the shipped speller, split into
encoder, big decoder forwards, draft forwards, logits processing and the rest (the loop's own work).

Each part is timed by wrapping the call that does it (the big encoder's forward, the big decoder's forward,
``DecoderRunner.forward`` or, with CUDA graphs, ``StaticDraftRunner.forward`` for the draft, with a T5 draft's own
lean encoder, the loop's logits processing); "loop and rest" is the wall time minus the timed parts. The speller
cases decode 32 held-out sentences one at a time and 128 in batches of 16 (sorted by length, as ``correct`` forms
batches). Per-round figures divide by the number of big
decoder forwards. Timers add a few microseconds per call; the wall times are the same method's in one run, so read
the shares, not the absolute numbers.

    python benchmarks/time_breakdown.py                      # long form, Whisper batch 16 clips, speller batch 1/16
    python benchmarks/time_breakdown.py --cases long-form --long-form other.wav
    python benchmarks/time_breakdown.py --cases long-form --drafts shipped runs/draft --repeats 2  # in turn
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import torch

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding import runner as runner_module
from seq2spec.decoding import sequences
from seq2spec.default_models import load_speller, load_whisper_base
from seq2spec.drafts.graphed_whisper import StaticDraftRunner
from seq2spec.drafts.lean_t5_encoder import LeanT5Encoder
from seq2spec.memory import retain_freed_memory
from seq2spec.whisper.audio import load_audio
from seq2spec.whisper.draft import load_whisper_draft

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_asr import LANGUAGE, SAMPLES, short_clips  # noqa: E402
from bench_core import processor_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPELLER_SENTENCES = {1: 32, 16: 128}  # held-out sentences per speller case: one at a time, or in batches of 16
SHIPPED = "shipped"  # --drafts: the shipped Whisper draft
PARTS = ("encoder", "big forwards", "draft forwards", "logits processing", "loop and rest")


class Timers:
    """Seconds and calls per part, for whatever runs inside ``active()``."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._depth = 0

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def wrap(self, part: str, function: Callable, *, counted: bool = True) -> Callable:
        """``function`` with its time added to ``part`` (and, if ``counted``, its calls to the part's calls)."""

        def timed(*args, **kwargs):
            if self._depth:  # nested inside another timed part: counted there
                return function(*args, **kwargs)
            self._depth += 1
            self._sync()
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._sync()
                self.seconds[part] += time.perf_counter() - start
                self.calls[part] += counted
                self._depth -= 1

        return timed


@contextmanager
def instrumented(timers: Timers, big: torch.nn.Module) -> Iterator[None]:
    """Time the big encoder, the big decoder (greedy's and seq2spec's), draft steps and logits processing."""
    encoder = big.get_encoder()
    originals = [
        (encoder, "forward", encoder.forward),
        (big, "forward", big.forward),
        (runner_module.DecoderRunner, "forward", runner_module.DecoderRunner.forward),
        (runner_module.DecoderRunner, "cross_attention", runner_module.DecoderRunner.cross_attention),
        (StaticDraftRunner, "forward", StaticDraftRunner.forward),
        (LeanT5Encoder, "__call__", LeanT5Encoder.__call__),
        (sequences.PrefixProcessor, "positions", sequences.PrefixProcessor.positions),
        (sequences.PrefixProcessor, "step", sequences.PrefixProcessor.step),
    ]
    run_forward = runner_module.DecoderRunner.forward

    def runner_forward(runner, tokens):
        if runner.model is big:  # through the model's forward, or its exact mirror (a big T5)
            return big_timed(runner, tokens)
        return draft_timed(runner, tokens)

    draft_timed = timers.wrap("draft forwards", run_forward)
    big_timed = timers.wrap("big forwards", run_forward)
    encoder.forward = timers.wrap("encoder", encoder.forward)
    big.forward = timers.wrap("big forwards", big.forward)  # decoder and output head
    runner_module.DecoderRunner.forward = runner_forward
    # the big model's cross-attention keys and values, computed before its first forward when a draft shares them
    runner_module.DecoderRunner.cross_attention = timers.wrap(
        "big forwards", runner_module.DecoderRunner.cross_attention, counted=False
    )
    StaticDraftRunner.forward = timers.wrap("draft forwards", StaticDraftRunner.forward)  # CUDA graphs' runner
    LeanT5Encoder.__call__ = timers.wrap("draft forwards", LeanT5Encoder.__call__)  # a T5 draft's own encoder
    sequences.PrefixProcessor.positions = timers.wrap("logits processing", sequences.PrefixProcessor.positions)
    sequences.PrefixProcessor.step = timers.wrap("logits processing", sequences.PrefixProcessor.step)
    try:
        yield
    finally:
        for owner, name, original in originals:
            if owner in (encoder, big):
                del owner.forward  # back to the class's method
            else:
                setattr(owner, name, original)


def measure(function: Callable[[], object], big: torch.nn.Module, device: torch.device) -> dict:
    with torch.inference_mode():
        function()  # warm-up, untimed
    timers = Timers(device)
    with instrumented(timers, big), torch.inference_mode():
        start = time.perf_counter()
        function()
        if device.type == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - start
    parts = {part: timers.seconds.get(part, 0.0) for part in PARTS[:-1]}
    parts["loop and rest"] = wall - sum(parts.values())
    rounds = timers.calls.get("big forwards", 0)
    drafts = timers.calls.get("draft forwards", 0)
    return {"wall": wall, "parts": parts, "big_forwards": rounds, "draft_forwards": drafts}


def draft_method(draft: str, drafts: list[str]) -> str:
    """The seq2spec method's name for ``draft``: plain ``seq2spec`` when the shipped draft is the only one."""
    return "seq2spec" if drafts == [SHIPPED] else f"seq2spec {Path(draft).name}"


def whisper_cases(args, device: torch.device) -> Iterator[tuple[str, str, Callable, torch.nn.Module]]:
    big, processor = load_whisper_base(device=device, dtype=args.torch_dtype)  # each draft loaded below
    speculators = {
        draft_method(draft, args.drafts): Seq2SeqSpeculator(
            big,
            load_whisper_draft(big, None if draft == SHIPPED else draft),
            processor,
            draft_cuda_graphs=args.draft_cuda_graphs,
        )
        for draft in args.drafts
    }
    dtype = big.dtype
    if "long-form" in args.cases:
        audio = load_audio(args.long_form)
        features = processor.feature_extractor(
            [audio],
            sampling_rate=16000,
            return_tensors="pt",
            truncation=False,
            padding="longest",
            return_attention_mask=True,
        )
        inputs = features["input_features"].to(device, dtype)
        mask = features["attention_mask"].to(device)
        kwargs = dict(attention_mask=mask, return_timestamps=True, **LANGUAGE)
        yield "whisper long form", "greedy", lambda: big.generate(inputs, **kwargs), big
        for method, speculator in speculators.items():
            yield "whisper long form", method, partial(speculator.generate, input_features=inputs, **kwargs), big
    if "clips16" in args.cases:
        clips = short_clips()
        chunk = [clips[i % len(clips)] for i in range(16)]
        inputs = processor.feature_extractor(chunk, sampling_rate=16000, return_tensors="pt")["input_features"]
        inputs = inputs.to(device, dtype)
        yield "whisper clips, batch 16", "encoder only", lambda: big.get_encoder()(inputs), big
        yield "whisper clips, batch 16", "greedy", lambda: big.generate(inputs, **LANGUAGE), big
        for method, speculator in speculators.items():
            decode = partial(speculator.generate, input_features=inputs, **LANGUAGE)
            yield "whisper clips, batch 16", method, decode, big


def speller_cases(args, device: torch.device) -> Iterator[tuple[str, str, Callable, torch.nn.Module]]:
    if not any(case.startswith("speller") for case in args.cases):
        return
    big, small, tokenizer = load_speller(device=device, dtype=args.torch_dtype)
    speculator = Seq2SeqSpeculator(big, small, tokenizer)
    copying = Seq2SeqSpeculator(big, "input-copy", tokenizer, spellcheck_copy=True)  # Seq2SeqSpeculator()'s default
    lines = (ROOT / "recipes" / "data" / "spelling_heldout.tsv").read_text(encoding="utf-8").splitlines()
    texts = [line.split("\t")[0] for line in lines[1:] if line.strip()]
    for case, size in (("speller1", 1), ("speller16", 16)):
        if case not in args.cases:
            continue
        chunk = sorted(texts[: SPELLER_SENTENCES[size]], key=len)  # batches of similar length, as correct() forms
        batches = [
            tokenizer(chunk[start : start + size], return_tensors="pt", padding=True).to(device)
            for start in range(0, len(chunk), size)
        ]
        label = f"speller, batch {size}"

        def each(method: Callable, batches: list = batches) -> Callable[[], None]:
            return lambda: [method(**encoded, max_new_tokens=128) for encoded in batches]

        yield label, "greedy", each(big.generate), big
        yield label, "seq2spec", each(speculator.generate), big
        yield label, "seq2spec spell-checked copy", each(copying.generate), big


Case = tuple[str, str, Callable, torch.nn.Module]  # case, method, the call to time, the big model


def in_turn(cases: list[Case], repeats: int) -> Iterator[Case]:
    """Every case once per repeat, in the order given, so that methods compared alternate rather than run back to back;
    with several repeats each method is named with its run ("seq2spec (run 2)")."""
    for repeat in range(repeats):
        for case, method, function, big in cases:
            yield case, (f"{method} (run {repeat + 1})" if repeats > 1 else method), function, big


def markdown(results: list[dict], title: str) -> str:
    lines = [f"# Where the time goes\n\n{title}\n"]
    header = " | ".join(PARTS)
    lines.append(f"| case | method | wall s | {header} | big / draft forwards | ms per round outside forwards |")
    lines.append("|---|---|---:|" + "---:|" * len(PARTS) + "---:|---:|")
    for r in results:
        shares = " | ".join(f"{r['parts'][p]:.2f} ({100 * r['parts'][p] / r['wall']:.0f}%)" for p in PARTS)
        rounds = r["big_forwards"]
        outside = r["parts"]["logits processing"] + r["parts"]["loop and rest"]
        per_round = f"{1000 * outside / rounds:.1f}" if rounds else "-"
        counts = f"{rounds} / {r['draft_forwards']}"
        lines.append(f"| {r['case']} | {r['method']} | {r['wall']:.2f} | {shares} | {counts} | {per_round} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--cases",
        nargs="+",
        default=["long-form", "clips16", "speller1", "speller16"],
        choices=["long-form", "clips16", "speller1", "speller16"],
    )
    parser.add_argument("--long-form", type=Path, default=SAMPLES / "long_form.wav", help="the long-form audio file")
    parser.add_argument(
        "--no-draft-cuda-graphs",
        dest="draft_cuda_graphs",
        action="store_false",
        help="Whisper: run the draft's lean step eagerly on a CUDA device (what its CUDA graphs save)",
    )
    parser.add_argument(
        "--drafts",
        nargs="+",
        default=[SHIPPED],
        help="Whisper drafts for the seq2spec rows: 'shipped' or folders of saved drafts (default: shipped)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="measure every case and method this many times, in turn (a host's run-to-run spread beside the gaps)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--name", default="time_breakdown_cpu")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    for draft in args.drafts:
        if draft != SHIPPED and not Path(draft).is_dir():
            parser.error(f"--drafts: {draft} is neither 'shipped' nor a folder")
    torch.set_num_threads(args.threads)
    retain_freed_memory()  # as the commands do: no page faults on buffers reused every call
    args.torch_dtype = getattr(torch, args.dtype)
    device = torch.device(args.device)
    results = []
    measured = [entry for cases in (whisper_cases, speller_cases) for entry in cases(args, device)]
    for case, method, function, big in in_turn(measured, args.repeats):
        result = {"case": case, "method": method, **measure(function, big, device)}
        results.append(result)
        print(
            case,
            method,
            f"{result['wall']:.2f}s",
            {k: round(v, 2) for k, v in result["parts"].items()},
            "rounds",
            result["big_forwards"],
            flush=True,
        )
    machine = f"{processor_name() if device.type == 'cpu' else torch.cuda.get_device_name(0)}, {args.threads} threads"
    title = f"{machine}, torch {torch.__version__}, {args.dtype}; long form: {args.long_form.name}"
    if not args.draft_cuda_graphs:
        title += "; the Whisper draft's CUDA graphs off"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps({"title": title, "results": results}, indent=2))
    table = markdown(results, title)
    (args.out / f"{args.name}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
