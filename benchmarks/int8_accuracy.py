"""What the int8 mode costs in accuracy: the embedded Whisper base and the shipped speller, float32 against int8.

Both precisions decode greedily with the model's own ``generate`` (seq2spec reproduces each exactly, so these are
also seq2spec's outputs in each mode). Whisper: the recipes' 12 synthetic clips and the long-form sample
(recipes/data/asr_samples, references.tsv; the long-form file by Whisper's sequential long-form decoding), WER and
CER after Whisper's English normaliser, and WER of int8's transcripts measured against float32's. Speller: the
shipped held-out pairs (recipes/data/spelling_heldout.tsv), CER of each, and the share of outputs identical in both
precisions. Writes ``<out>/int8_accuracy.md`` and ``.json``.

    python benchmarks/int8_accuracy.py
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import torch

from seq2spec.default_models import load_speller, load_whisper_base
from seq2spec.memory import retain_freed_memory
from seq2spec.whisper.audio import load_audio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "recipes"))
from metrics import cer, text_normalizer, wer  # noqa: E402

SAMPLES = ROOT / "recipes" / "data" / "asr_samples"
HELDOUT = ROOT / "recipes" / "data" / "spelling_heldout.tsv"
LANGUAGE = {"language": "en", "task": "transcribe"}


def read_tsv(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return [row for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE) if row][1:]


def whisper_texts(dtype: str) -> tuple[list[str], str]:
    """(texts of the short clips, text of the long-form file) from base's greedy generate in ``dtype``."""
    model, processor = load_whisper_base(dtype=dtype)
    rows = read_tsv(SAMPLES / "references.tsv")
    clips = [load_audio(SAMPLES / name) for name, _ in rows if name != "long_form.wav"]
    features = processor.feature_extractor(clips, sampling_rate=16000, return_tensors="pt").input_features
    short = processor.batch_decode(model.generate(features, **LANGUAGE), skip_special_tokens=True)
    long_audio = load_audio(SAMPLES / "long_form.wav")
    long_features = processor.feature_extractor(
        [long_audio],
        sampling_rate=16000,
        return_tensors="pt",
        truncation=False,
        padding="longest",
        return_attention_mask=True,
    )
    ids = model.generate(
        long_features.input_features, attention_mask=long_features.attention_mask, return_timestamps=True, **LANGUAGE
    )
    return [t.strip() for t in short], processor.batch_decode(ids, skip_special_tokens=True)[0].strip()


def speller_texts(dtype: str, sources: list[str], batch_size: int = 32) -> list[str]:
    big, _, tokenizer = load_speller(dtype=dtype)
    outputs = []
    for start in range(0, len(sources), batch_size):
        batch = tokenizer(sources[start : start + batch_size], padding=True, return_tensors="pt")
        ids = big.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=128)
        outputs += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    retain_freed_memory()  # as the commands do: no page faults on buffers reused every call
    normalise = text_normalizer("en")
    references = dict(read_tsv(SAMPLES / "references.tsv"))
    short_refs = [normalise(text) for name, text in references.items() if name != "long_form.wav"]
    long_ref = normalise(references["long_form.wav"])
    heldout = read_tsv(HELDOUT)
    sources, targets = [row[0] for row in heldout], [row[1] for row in heldout]

    results: dict[str, dict] = {}
    texts = {}
    for dtype in ("float32", "int8"):
        short, long_text = whisper_texts(dtype)
        spelled = speller_texts(dtype, sources)
        texts[dtype] = (short, long_text, spelled)
        short_norm = [normalise(t) for t in short]
        results[dtype] = {
            "whisper_short_wer": wer(short_refs, short_norm),
            "whisper_short_cer": cer(short_refs, short_norm),
            "whisper_long_wer": wer([long_ref], [normalise(long_text)]),
            "whisper_long_cer": cer([long_ref], [normalise(long_text)]),
            "speller_cer": cer(targets, spelled),
        }
    float_short, float_long, float_spelled = texts["float32"]
    int8_short, int8_long, int8_spelled = texts["int8"]
    results["int8_against_float32"] = {
        "whisper_short_wer": wer([normalise(t) for t in float_short], [normalise(t) for t in int8_short]),
        "whisper_long_wer": wer([normalise(float_long)], [normalise(int8_long)]),
        "speller_identical_share": sum(a == b for a, b in zip(float_spelled, int8_spelled, strict=True)) / len(sources),
    }
    results["speller_input_cer"] = cer(targets, sources)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "int8_accuracy.json").write_text(json.dumps(results, indent=2) + "\n")
    f32, i8, against = results["float32"], results["int8"], results["int8_against_float32"]
    lines = [
        "| task | measure | float32 | int8 |",
        "|---|---|---:|---:|",
        f"| Whisper base, 12 clips | WER / CER | {f32['whisper_short_wer']:.3f} / {f32['whisper_short_cer']:.3f} "
        f"| {i8['whisper_short_wer']:.3f} / {i8['whisper_short_cer']:.3f} |",
        f"| Whisper base, long-form sample | WER / CER | {f32['whisper_long_wer']:.3f} / {f32['whisper_long_cer']:.3f} "
        f"| {i8['whisper_long_wer']:.3f} / {i8['whisper_long_cer']:.3f} |",
        f"| speller, {len(sources)} held-out pairs (input CER {results['speller_input_cer']:.3f}) | CER "
        f"| {f32['speller_cer']:.4f} | {i8['speller_cer']:.4f} |",
        "",
        f"int8 against float32: WER {against['whisper_short_wer']:.3f} on the clips, "
        f"{against['whisper_long_wer']:.3f} on the long-form sample; "
        f"{against['speller_identical_share']:.1%} of the speller's outputs identical.",
    ]
    (args.out / "int8_accuracy.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
