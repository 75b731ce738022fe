"""Checks of the arguments of ``Seq2SeqSpeculator``'s public calls: each error names the bad value and what was
expected."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

import torch
from transformers import GenerationConfig

# generate() arguments that would select another decoding method or feed one the loop does not have
REFUSED_GENERATE_ARGUMENTS = (
    "assistant_model",
    "streamer",
    "negative_prompt_ids",
    "negative_prompt_attention_mask",
    "custom_generate",
    "synced_gpus",
)
GENERATE_ARGUMENTS = (
    "generation_config",
    "logits_processor",
    "stopping_criteria",
    "prefix_allowed_tokens_fn",
    "decoder_input_ids",  # a decoder prompt
    "decoder_attention_mask",  # its left padding
)


def check_positive_int(name: str, value: Any, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")


def check_texts(texts: Iterable[str]) -> list[str]:
    """``texts`` as a list of strings."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a list of strings, not a single string: wrap it in a list")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"texts must be an iterable of strings, got {type(texts).__name__}") from None
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{index}] is {type(text).__name__}, expected str")
    return texts


def check_generation_arguments(arguments: dict[str, Any], model: Any = None) -> None:
    """``generate``'s own keyword arguments: ``GenerationConfig`` fields, the few objects it takes besides, and the
    arguments ``model``'s own ``generate`` names (a family's, such as Pop2Piano's ``composer``)."""
    known = GenerationConfig().to_dict()
    for name in REFUSED_GENERATE_ARGUMENTS:
        if arguments.get(name) is not None:
            raise ValueError(f"{name} is not supported by Seq2SeqSpeculator.generate")
    own = set(inspect.signature(model.generate).parameters) if model is not None else set()
    allowed = set(known) | set(GENERATE_ARGUMENTS) | own
    unexpected = sorted(name for name in arguments if name not in allowed)
    if unexpected:
        raise TypeError(
            f"unexpected generation arguments {unexpected}: Seq2SeqSpeculator.generate accepts GenerationConfig "
            "fields (for example min_new_tokens, no_repeat_ngram_size, repetition_penalty)"
        )


def check_batch(
    input_ids: torch.Tensor, attention_mask: torch.Tensor | None, device: torch.device, limit: int | None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A ``[batch, length]`` tensor of token ids (at most ``limit`` per row) and its mask, moved to ``device``."""
    if not isinstance(input_ids, torch.Tensor):
        raise TypeError(f"input_ids must be a torch.Tensor of token ids, got {type(input_ids).__name__}")
    if input_ids.dim() != 2 or input_ids.shape[0] == 0 or input_ids.shape[1] == 0:
        raise ValueError(f"input_ids must be a non-empty [batch, length] tensor, got shape {tuple(input_ids.shape)}")
    if input_ids.dtype.is_floating_point or input_ids.dtype == torch.bool:
        raise TypeError(f"input_ids must hold integer token ids, got dtype {input_ids.dtype}")
    if attention_mask is not None:
        if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
            shape = tuple(attention_mask.shape) if isinstance(attention_mask, torch.Tensor) else attention_mask
            raise ValueError(
                f"attention_mask must be a tensor shaped like input_ids {tuple(input_ids.shape)}, got {shape}"
            )
        attention_mask = attention_mask.to(device)
    if limit is not None and input_ids.shape[1] > limit:
        raise ValueError(
            f"input_ids has {input_ids.shape[1]} tokens per row, more than the model's {limit} source positions"
        )
    return input_ids.to(device), attention_mask


def encoder_inputs(
    model: torch.nn.Module,
    limit: int | None,
    input_ids: torch.Tensor | None,
    input_features: torch.Tensor | None,
    input_values: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
    """The one encoder input given, checked and on ``model``'s device (floating inputs in its dtype), with its mask;
    token ids at most ``limit`` per row."""
    named = {"input_ids": input_ids, "input_features": input_features, "input_values": input_values}
    given = {name: value for name, value in named.items() if value is not None}
    if len(given) != 1:
        raise TypeError(
            f"generate() needs one encoder input (input_ids, input_features or input_values); got "
            f"{sorted(given) or 'none'} (the big model reads {model.main_input_name})"
        )
    name, value = next(iter(given.items()))
    device = model.device
    if name == "input_ids":
        value, attention_mask = check_batch(value, attention_mask, device, limit)
        return {name: value}, attention_mask
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor, got {type(value).__name__}")
    if attention_mask is not None:
        attention_mask = attention_mask.to(device)
    return {name: value.to(device, model.dtype)}, attention_mask


def sampling_generator(
    do_sample: bool, generator: torch.Generator | None, seed: int | None, device: torch.device
) -> torch.Generator | None:
    """The random generator of a sampling call on ``device`` (from ``seed`` or the caller's), None when greedy."""
    if not do_sample:
        if generator is not None or seed is not None:
            raise ValueError(
                "generator= and seed= only apply when sampling (do_sample=True, or a Whisper temperature above 0)"
            )
        return None
    if generator is not None and seed is not None:
        raise ValueError("pass seed= or generator=, not both")
    if seed is not None:
        return torch.Generator(device=device).manual_seed(seed)
    if generator is not None:
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        if torch.device(generator.device).type != device.type:
            raise ValueError(
                f"generator is on {generator.device} but the big model is on {device}; "
                "create it with torch.Generator(device=...) on the model's device"
            )
    return generator
