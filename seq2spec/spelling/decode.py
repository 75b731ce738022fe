"""Texts decoded by a model in batches of similar token length, results in the caller's order."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from seq2spec.spelling.pipeline import InputTooLongError

# (input_ids, attention_mask) -> output token ids, one row per input row
Generate = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def source_limit(tokenizer: PreTrainedTokenizerBase, model_limit: int | None) -> int | None:
    """The most source tokens the model and its tokenizer accept (None: no limit)."""
    limits = [model_limit]
    model_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(model_max, int) and model_max < 1_000_000:
        limits.append(model_max)
    limits = [limit for limit in limits if limit]
    return min(limits) if limits else None


@dataclass(frozen=True)
class TextDecoder:
    """``decoder(texts)``: ``generate``'s output for each text (``prefix`` put before it), decoded to text.

    Texts are sorted by token length into batches of ``batch_size``. A text over ``limit`` tokens raises
    ``InputTooLongError`` unless ``truncate``, which keeps its first tokens (the end token included).
    """

    tokenizer: PreTrainedTokenizerBase
    generate: Generate
    batch_size: int = 32
    prefix: str | None = None
    limit: int | None = None
    truncate: bool = False
    progress: bool = False

    def __call__(self, texts: list[str]) -> list[str]:
        tokenizer = self.tokenizer
        encoded = self.encode(texts)
        order = sorted(range(len(texts)), key=lambda index: len(encoded[index]))
        starts = range(0, len(order), self.batch_size)
        if self.progress:
            from tqdm import tqdm

            starts = tqdm(starts, desc="seq2spec batches", unit="batch", file=sys.stderr)
        results = [""] * len(texts)
        for start in starts:
            chunk = order[start : start + self.batch_size]
            batch = tokenizer.pad({"input_ids": [encoded[i] for i in chunk]}, return_tensors="pt")
            outputs = self.generate(batch["input_ids"], batch["attention_mask"])
            for index, text in zip(chunk, tokenizer.batch_decode(outputs, skip_special_tokens=True), strict=True):
                results[index] = text
        return results

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids, within the limit."""
        sources = [self.prefix + text if self.prefix else text for text in texts]
        encoded = [self.tokenizer(source, verbose=False)["input_ids"] for source in sources]
        limit = self.limit
        too_long = [index for index, ids in enumerate(encoded) if limit is not None and len(ids) > limit]
        if too_long and not self.truncate:
            raise InputTooLongError(too_long[0], len(encoded[too_long[0]]), limit, len(too_long))
        for index in too_long:  # the tokenizer's own truncation keeps its end-of-source token
            encoded[index] = self.tokenizer(sources[index], truncation=True, max_length=limit)["input_ids"]
        return encoded
