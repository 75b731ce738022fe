"""The spelling-correction pair that ships inside the package (trained by ``recipes/train_speller.py``)."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

SPELLER_DIR = Path(__file__).parent / "assets" / "speller"


def load_speller(
    device: str | torch.device | None = None, dtype: torch.dtype | None = None
) -> tuple[PreTrainedModel, PreTrainedModel, PreTrainedTokenizerBase]:
    """The shipped big corrector, its distilled draft and their shared tokenizer.

    The weights are stored in float16; they load as float32 unless ``dtype`` says otherwise (float16 matrix
    products are slow or unsupported on many CPUs).
    """
    missing = [str(SPELLER_DIR / name) for name in ("big", "small") if not (SPELLER_DIR / name).is_dir()]
    if missing:
        raise FileNotFoundError(
            f"the shipped speller is missing ({', '.join(missing)}): this install has no speller weights; "
            "pass your own models (Seq2SeqSpeculator(big, small) or seq2spec correct --model ...)"
        )
    dtype = dtype or torch.float32
    big = AutoModelForSeq2SeqLM.from_pretrained(SPELLER_DIR / "big", dtype=dtype).eval()
    small = AutoModelForSeq2SeqLM.from_pretrained(SPELLER_DIR / "small", dtype=dtype).eval()
    if device is not None:
        big, small = big.to(device), small.to(device)
    tokenizer = AutoTokenizer.from_pretrained(SPELLER_DIR / "big")
    return big, small, tokenizer
