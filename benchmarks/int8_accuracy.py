"""How far int8 mode moves the shipped models from float32: WER/CER of Whisper base (greedy, float32 and int8) on the
recipes' clips and the long-form file, and CER of the shipped speller on its held-out pairs.

Both precisions decode with the model's own ``generate`` (seq2spec's output equals it in each precision, which the
tests and the speed benchmarks check). Writes ``results/int8_accuracy.md``.

    python benchmarks/int8_accuracy.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from seq2spec.default_models import load_speller, load_whisper_base
from seq2spec.int8 import quantize_int8
from seq2spec.whisper.audio import load_audio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "recipes"))
from metrics import cer, wer  # noqa: E402

SAMPLES = ROOT / "recipes" / "data" / "asr_samples"
LANGUAGE = {"language": "en", "task": "transcribe"}


def whisper_texts(big, processor, names: list[str]) -> list[str]:
    texts = []
    with torch.inference_mode():
        for name in names:
            audio = load_audio(SAMPLES / name)
            long_form = name == "long_form.wav"
            options = {"truncation": False, "padding": "longest", "return_attention_mask": True} if long_form else {}
            features = processor.feature_extractor([audio], sampling_rate=16000, return_tensors="pt", **options)
            extra = {"return_timestamps": True, "attention_mask": features["attention_mask"]} if long_form else {}
            tokens = big.generate(features["input_features"], **LANGUAGE, **extra)
            texts.append(processor.batch_decode(tokens, skip_special_tokens=True)[0].strip())
    return texts


def speller_texts(big, tokenizer, sources: list[str]) -> list[str]:
    outputs = []
    with torch.inference_mode():
        for start in range(0, len(sources), 16):
            batch = tokenizer(sources[start : start + 16], return_tensors="pt", padding=True)
            tokens = big.generate(**batch, max_new_tokens=128)
            outputs += tokenizer.batch_decode(tokens, skip_special_tokens=True)
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lines = ["# int8 mode against float32 (greedy, the models' own generate)", ""]
    lines += ["| model, data | float32 | int8 | int8 output equal to float32 |", "|---|---:|---:|---:|"]

    rows = [line.split("\t") for line in (SAMPLES / "references.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    references = {name: text for name, text in rows}
    clips = sorted(name for name in references if name != "long_form.wav")
    results = {}
    for precision in ("float32", "int8"):
        big, processor = load_whisper_base()
        if precision == "int8":
            quantize_int8(big)
        results[precision] = whisper_texts(big, processor, [*clips, "long_form.wav"])
    for label, selection in (
        ("whisper base, 12 clips (WER)", slice(0, -1)),
        ("whisper base, long form (WER)", slice(-1, None)),
    ):
        names = [*clips, "long_form.wav"][selection]
        refs = [references[name] for name in names]
        f32, i8 = results["float32"][selection], results["int8"][selection]
        same = sum(a == b for a, b in zip(f32, i8, strict=True))
        lines.append(f"| {label} | {wer(refs, f32):.4f} | {wer(refs, i8):.4f} | {same}/{len(names)} |")

    pairs = [line.split("\t") for line in (ROOT / "recipes/data/spelling_heldout.tsv").read_text().splitlines()[1:]]
    sources, targets = [p[0] for p in pairs], [p[1] for p in pairs]
    corrected = {}
    for precision in ("float32", "int8"):
        big, _, tokenizer = load_speller()
        if precision == "int8":
            quantize_int8(big)
        corrected[precision] = speller_texts(big, tokenizer, sources)
    same = sum(a == b for a, b in zip(corrected["float32"], corrected["int8"], strict=True))
    lines.append(
        f"| shipped speller, {len(sources)} held-out pairs (CER; input {cer(targets, sources):.4f}) | "
        f"{cer(targets, corrected['float32']):.4f} | {cer(targets, corrected['int8']):.4f} | {same}/{len(sources)} |"
    )
    table = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "int8_accuracy.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
