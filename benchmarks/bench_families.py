"""The pairs users run, at full size from their published configurations with random weights (no hub needed).

For each pair: whether seq2spec's output equals the big model's own greedy ``generate`` on a batch (random weights
give some output; the identity holds whatever it is), the peak memory of the process that holds the pair, and the
time of one big-model verification forward (each row fed ``--fed`` tokens over a cache of ``--cache`` tokens, as the
loop's rounds feed it) against one draft step (one token per row). Their ratio ``c`` bounds what speculation can
gain: a round that drafts ``k`` tokens and keeps them all emits ``k + 1`` tokens for ``1 + k c`` big forwards' time,
so no speedup can pass ``(k + 1) / (1 + k c)``. Both forwards run through transformers (seq2spec's runner, no fast
path), on the rows of one batch.

    python benchmarks/bench_families.py                          # every pair, one process each
    python benchmarks/bench_families.py --pairs marian nllb-3.3b  # some of them
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import transformers

RESULTS = Path(__file__).parent / "results"
DRAFTED = 4  # k of the bound (k + 1) / (1 + k c)


@dataclass
class Result:
    pair: str
    big: str
    draft: str
    big_parameters_m: float
    draft_parameters_m: float
    dtype: str
    rows: int
    identical: bool
    tokens_per_big_row_forward: float
    peak_rss_gb: float
    big_forward_ms: float
    draft_step_ms: float
    cost_ratio: float
    speedup_bound: float


def _whisper_large_v3(decoder_layers: int = 32):
    from transformers import WhisperConfig

    return WhisperConfig(
        vocab_size=51866, num_mel_bins=128, d_model=1280, encoder_layers=32, decoder_layers=decoder_layers,
        encoder_attention_heads=20, decoder_attention_heads=20, encoder_ffn_dim=5120, decoder_ffn_dim=5120,
        max_source_positions=1500, max_target_positions=448, pad_token_id=50256, bos_token_id=50257,
        eos_token_id=50257, decoder_start_token_id=50258,
    )  # fmt: skip


def _whisper_tiny():
    from transformers import WhisperConfig

    return WhisperConfig(
        vocab_size=51865, num_mel_bins=80, d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
        decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536, max_source_positions=1500,
        max_target_positions=448, pad_token_id=50257, bos_token_id=50257, eos_token_id=50257,
        decoder_start_token_id=50258,
    )  # fmt: skip


def _whisper_tokenizers():
    """Tokenizers of Whisper's two multilingual vocabularies, as tiny ... large-v2 and large-v3 lay them out (their
    text tokens stand-ins): large-v3 adds <|yue|> after the 99 languages, which moves every later token up one."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    def tokenizer(languages: int) -> PreTrainedTokenizerFast:
        texts = [f"t{index}" for index in range(50257)] + ["<|endoftext|>", "<|startoftranscript|>"]
        specials = ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>"]
        tokens = [*texts, *(f"<|language{index}|>" for index in range(languages)), *specials, "<|notimestamps|>"]
        tokens += [f"<|{index * 0.02:.2f}|>" for index in range(1501)]
        vocab = {token: index for index, token in enumerate(tokens)}
        return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>")))

    return tokenizer(100), tokenizer(99)


def _nllb(d_model: int, layers: int, ffn: int):
    from transformers import M2M100Config

    return M2M100Config(
        vocab_size=256206, d_model=d_model, encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=16,
        decoder_attention_heads=16, encoder_ffn_dim=ffn, decoder_ffn_dim=ffn, max_position_embeddings=1024,
        scale_embedding=True, pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
    )  # fmt: skip


def _marian(d_model: int, heads: int, ffn: int):
    from transformers import MarianConfig

    return MarianConfig(
        vocab_size=58101, decoder_vocab_size=58101, d_model=d_model, encoder_layers=6, decoder_layers=6,
        encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=ffn, decoder_ffn_dim=ffn,
        max_position_embeddings=512, pad_token_id=58100, eos_token_id=0, decoder_start_token_id=58100,
    )  # fmt: skip


def _flan_t5(d_model: int, d_ff: int, layers: int, heads: int):
    from transformers import T5Config

    return T5Config(
        vocab_size=32128, d_model=d_model, d_kv=64, d_ff=d_ff, num_layers=layers, num_decoder_layers=layers,
        num_heads=heads, feed_forward_proj="gated-gelu", tie_word_embeddings=False, pad_token_id=0, eos_token_id=1,
        decoder_start_token_id=0,
    )  # fmt: skip


def _t5gemma_2b(decoder_layers: int = 26, encoder_layers: int = 26):
    from transformers import T5GemmaConfig

    config = T5GemmaConfig()  # its defaults are the 2B-2B shape
    config.encoder.num_hidden_layers = encoder_layers
    config.decoder.num_hidden_layers = decoder_layers
    return config


# name -> (big description, draft description, builder of (big, draft), dtype)
PAIRS = {
    "whisper-large-v3+distil": ("whisper-large-v3", "distil-large-v3's 2-layer decoder (WhisperForCausalLM)"),
    "whisper-large-v3+turbo": ("whisper-large-v3", "whisper-large-v3-turbo's 4-layer decoder (WhisperForCausalLM)"),
    "whisper-large-v3+tiny": (
        "whisper-large-v3",
        "whisper-tiny: its own 80-bin encoder and the v2 vocabulary (tokens matched by text, features rebinned)",
    ),
    "nllb-3.3b": ("NLLB-200 3.3B", "NLLB-200 distilled 600M"),
    "nllb-1.3b": ("NLLB-200 1.3B", "NLLB-200 distilled 600M"),
    "marian": ("opus-mt-tc-big (1024 wide, 6+6 layers)", "opus-mt base (512 wide, 6+6 layers), same vocabulary"),
    "flan-t5": ("flan-t5-large", "flan-t5-small"),
    "t5gemma-2b": ("T5Gemma 2B-2B (bfloat16)", "its encoder and first 2 decoder layers (bfloat16)"),
}


def build_pair(name: str):
    """The pair's big and draft models (random weights, eval mode), the dtype they run in and the speculator's extra
    arguments (the tokenizers of a draft with another vocabulary)."""
    from transformers import (
        M2M100ForConditionalGeneration,
        MarianMTModel,
        T5ForConditionalGeneration,
        T5GemmaForConditionalGeneration,
        WhisperForCausalLM,
        WhisperForConditionalGeneration,
    )

    torch.manual_seed(0)
    if name == "whisper-large-v3+tiny":
        big_tokenizer, tiny_tokenizer = _whisper_tokenizers()
        big, tiny = (
            WhisperForConditionalGeneration(_whisper_large_v3()),
            WhisperForConditionalGeneration(_whisper_tiny()),
        )
        return big.eval(), tiny.eval(), torch.float32, {"tokenizer": big_tokenizer, "draft_tokenizer": tiny_tokenizer}
    if name.startswith("whisper"):
        big = WhisperForConditionalGeneration(_whisper_large_v3())
        draft = WhisperForCausalLM(_whisper_large_v3(decoder_layers=2 if name.endswith("distil") else 4))
        return big.eval(), draft.eval(), torch.float32, {}
    if name.startswith("nllb"):
        shape = {"nllb-3.3b": (2048, 24, 8192), "nllb-1.3b": (1024, 24, 8192)}[name]
        big = M2M100ForConditionalGeneration(_nllb(*shape))
        return big.eval(), M2M100ForConditionalGeneration(_nllb(1024, 12, 4096)).eval(), torch.float32, {}
    if name == "marian":
        big, draft = MarianMTModel(_marian(1024, 16, 4096)), MarianMTModel(_marian(512, 8, 2048))
        return big.eval(), draft.eval(), torch.float32, {}
    if name == "flan-t5":
        big = T5ForConditionalGeneration(_flan_t5(1024, 2816, 24, 16))
        return big.eval(), T5ForConditionalGeneration(_flan_t5(512, 1024, 8, 6)).eval(), torch.float32, {}
    if name == "t5gemma-2b":
        torch.set_default_dtype(torch.bfloat16)
        try:
            big = T5GemmaForConditionalGeneration(_t5gemma_2b()).eval()
            # its own encoder (one layer, so as not to hold a second one) gives way to the big model's
            draft = T5GemmaForConditionalGeneration(_t5gemma_2b(decoder_layers=2, encoder_layers=1)).eval()
        finally:
            torch.set_default_dtype(torch.float32)
        draft.model.encoder = big.get_encoder()  # the same module: read once for both
        return big, draft, torch.bfloat16, {}
    raise ValueError(f"unknown pair {name!r}; choose from {sorted(PAIRS)}")


def _inputs(big, rows: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    if big.main_input_name == "input_features":
        frames = 2 * big.config.max_source_positions
        return {"input_features": torch.randn(rows, big.config.num_mel_bins, frames, generator=generator)}
    lengths = [24 - 5 * row for row in range(rows)]
    ids = torch.randint(5, 1000, (rows, max(lengths)), generator=generator)
    mask = (torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]).long()
    pad = big.config.pad_token_id
    return {"input_ids": ids * mask + pad * (1 - mask), "attention_mask": mask}


@torch.inference_mode()
def measure(name: str, rows: int, fed: int, cache: int, repeats: int, max_new_tokens: int) -> Result:
    from seq2spec import Seq2SeqSpeculator
    from seq2spec.decoding.families import family_of
    from seq2spec.decoding.runner import DecoderRunner
    from seq2spec.drafts.mel_bins import rebin_log_mel

    big, draft, dtype, extra = build_pair(name)
    inputs = _inputs(big, rows)
    inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}
    speculator = Seq2SeqSpeculator(big, draft, num_draft_tokens=DRAFTED, **extra)
    expected = big.generate(**inputs, do_sample=False, num_beams=1, max_new_tokens=max_new_tokens)
    got = speculator.generate(**inputs, max_new_tokens=max_new_tokens)
    identical = expected.shape == got.shape and bool(torch.equal(expected, got))
    per_forward = speculator.last_stats.tokens_per_big_forward

    mask = inputs.get("attention_mask")
    sources = {k: v for k, v in inputs.items() if k != "attention_mask"}
    big_encoded = big.get_encoder()(**sources, attention_mask=mask).last_hidden_state
    config = big.generation_config
    start = config.decoder_start_token_id if config.decoder_start_token_id is not None else config.bos_token_id
    generator = torch.Generator().manual_seed(2)

    def timed(model, feed: int) -> float:
        family = family_of(model)
        vocabulary = model.get_output_embeddings().weight.shape[0]
        shares = family.decoder_only or model is big or model.get_encoder() is big.get_encoder()
        own = {
            k: rebin_log_mel(v, model.config.num_mel_bins) if k == "input_features" else v for k, v in sources.items()
        }
        encoded = big_encoded if shares else model.get_encoder()(**own, attention_mask=mask).last_hidden_state
        runner = DecoderRunner(model, family, encoded.to(model.dtype), mask)
        prompt = torch.cat([torch.full((rows, 1), start), torch.randint(5, vocabulary, (rows, cache - 1))], dim=1)
        runner.forward(prompt)
        runner.forward(torch.randint(5, vocabulary, (rows, feed), generator=generator))  # warm
        runner.keep([0] * rows, fed=feed)
        times = []
        for _ in range(repeats):
            tokens = torch.randint(5, vocabulary, (rows, feed), generator=generator)
            began = time.perf_counter()
            runner.forward(tokens)
            times.append(time.perf_counter() - began)
            runner.keep([0] * rows, fed=feed)
        return statistics.median(times) * 1000

    big_ms, draft_ms = timed(big, fed), timed(draft, 1)
    ratio = draft_ms / big_ms
    return Result(
        pair=name,
        big=PAIRS[name][0],
        draft=PAIRS[name][1],
        big_parameters_m=sum(p.numel() for p in big.parameters()) / 1e6,
        draft_parameters_m=sum(p.numel() for p in draft.parameters() if not _shared(p, big)) / 1e6,
        dtype=str(dtype).removeprefix("torch."),
        rows=rows,
        identical=identical,
        tokens_per_big_row_forward=per_forward,
        peak_rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        big_forward_ms=big_ms,
        draft_step_ms=draft_ms,
        cost_ratio=ratio,
        speedup_bound=(DRAFTED + 1) / (1 + DRAFTED * ratio),
    )


def _shared(parameter: torch.Tensor, big: torch.nn.Module) -> bool:
    return any(parameter is other for other in big.parameters())


def markdown(results: list[Result], machine: str, fed: int, cache: int) -> str:
    lines = [
        f"Machine: {machine}; verification forward: {fed} tokens per row over {cache} cached; draft step: 1 token per "
        f"row; speedup bound for k = {DRAFTED}: (k + 1) / (1 + k c)",
        "",
        "| pair | big | draft | params big / draft (M) | dtype | rows | identical | peak RSS GB | big forward ms "
        "| draft step ms | cost ratio c | bound |",
        "|---|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.pair} | {r.big} | {r.draft} | {r.big_parameters_m:.0f} / {r.draft_parameters_m:.0f} | {r.dtype} "
            f"| {r.rows} | {'yes' if r.identical else 'NO'} | {r.peak_rss_gb:.1f} | {r.big_forward_ms:.0f} "
            f"| {r.draft_step_ms:.0f} | {r.cost_ratio:.3f} | {r.speedup_bound:.2f} |"
        )
    return "\n".join(lines) + "\n"


def plot(results: list[Result], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 3.5))
    names = [r.pair for r in results]
    axis.barh(names, [r.speedup_bound for r in results], color="#4c72b0")
    for index, r in enumerate(results):
        axis.text(r.speedup_bound, index, f" c={r.cost_ratio:.3f}", va="center", fontsize=8)
    axis.set_xlabel(f"speedup bound (k = {DRAFTED} drafted tokens, all kept)")
    axis.set_title("Real-shape pairs: what the draft step's cost allows")
    axis.invert_yaxis()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS), choices=list(PAIRS))
    parser.add_argument("--rows", type=int, default=4, help="rows per batch (Whisper: 1, its encoder is long)")
    parser.add_argument("--fed", type=int, default=DRAFTED + 1, help="tokens per row of a verification forward")
    parser.add_argument("--cache", type=int, default=24, help="tokens already in each row's cache")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="families_cpu")
    parser.add_argument("--merge", action="store_true", help="keep the other pairs' results already in --out")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # measure one pair in this process (peak memory its own)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.one:
        rows = 1 if args.one.startswith("whisper") else args.rows
        result = measure(args.one, rows, args.fed, args.cache, args.repeats, args.max_new_tokens)
        print(json.dumps(asdict(result)))
        return
    stored = args.out / f"{args.name}.json"
    kept = [Result(**row) for row in json.loads(stored.read_text())] if args.merge and stored.exists() else []
    results = [result for result in kept if result.pair not in args.pairs]
    for name in args.pairs:
        command = [sys.executable, __file__, "--one", name, *_shared_arguments(args)]
        began = time.perf_counter()
        finished = subprocess.run(command, capture_output=True, text=True, check=False)
        if finished.returncode:
            print(f"{name}: failed\n{finished.stderr[-2000:]}", flush=True)
            continue
        results.append(Result(**json.loads(finished.stdout.strip().splitlines()[-1])))
        print(f"{name}: {results[-1]} ({time.perf_counter() - began:.0f} s)", flush=True)
    from bench_core import processor_name

    device = f"CPU {processor_name()}, {args.threads} threads" if not torch.cuda.is_available() else "CUDA"
    machine = f"{device}, torch {torch.__version__}, transformers {transformers.__version__}"
    results.sort(key=lambda result: list(PAIRS).index(result.pair))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(results, machine, args.fed, args.cache))
    if results:
        plot(results, args.out / f"{args.name}.png")
    print(markdown(results, machine, args.fed, args.cache))


def _shared_arguments(args: argparse.Namespace) -> list[str]:
    return [
        "--rows", str(args.rows), "--fed", str(args.fed), "--cache", str(args.cache), "--repeats",
        str(args.repeats), "--max-new-tokens", str(args.max_new_tokens), "--threads", str(args.threads),
    ]  # fmt: skip


if __name__ == "__main__":
    main()
