"""Resolve a model's generation settings exactly as ``model.generate`` would for greedy decoding or sampling.

Token-for-token identity with ``big.generate(do_sample=False)`` depends on using the same decoder start token,
the same end-of-sequence and padding ids, the same length limit and the same logits processors. transformers
derives these through private helpers of ``GenerationMixin``; this module is the one place that calls them, so a
change in transformers touches nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import GenerationConfig, LogitsProcessorList, PreTrainedModel

from seq2spec.processors import with_cached_masks

# Settings that change the decoding strategy away from plain greedy search.
_NOT_GREEDY = {
    "do_sample": False,
    "num_beams": 1,
    "num_return_sequences": 1,
    "num_beam_groups": 1,
    "penalty_alpha": None,
}
# Settings with no speculative equivalent yet: refused rather than silently ignored.
_UNSUPPORTED = ("stop_strings", "max_time", "prompt_lookup_num_tokens", "assistant_early_exit", "watermarking_config")


@dataclass(frozen=True)
class GreedyPlan:
    """Everything the speculative loop needs to reproduce ``generate``'s greedy search."""

    decoder_start_token_id: int
    eos_token_ids: tuple[int, ...]
    pad_token_id: int
    max_new_tokens: int
    logits_processor: LogitsProcessorList
    generation_config: GenerationConfig
    # multinomial sampling (``do_sample=True``): the processors then include the temperature/top-k/top-p warpers
    do_sample: bool = False
    # the decoder's first tokens (``[rows, P]``); None means the decoder start token alone
    decoder_prompt: torch.Tensor | None = None

    def prompt(self, rows: int, device: torch.device) -> torch.Tensor:
        if self.decoder_prompt is not None:
            return self.decoder_prompt.to(device)
        return torch.full((rows, 1), self.decoder_start_token_id, dtype=torch.long, device=device)

    @property
    def prompt_length(self) -> int:
        return 1 if self.decoder_prompt is None else int(self.decoder_prompt.shape[1])


def plan_greedy_generation(
    model: PreTrainedModel,
    encoder_input_ids: torch.Tensor,
    max_new_tokens: int | None,
    generation_kwargs: dict[str, Any],
    allow_sampling: bool = False,
    *,
    decoder_prompt: torch.Tensor | None = None,
    logits_processor: LogitsProcessorList | None = None,
    model_input_name: str = "input_ids",
) -> GreedyPlan:
    """Build the plan ``model.generate(encoder_input_ids, max_new_tokens=..., **generation_kwargs)`` uses.

    Greedy search only, unless ``allow_sampling``: then ``do_sample=True`` (multinomial sampling) is accepted too.
    ``decoder_prompt`` (``decoder_input_ids``) and ``logits_processor`` are what a caller such as Whisper's
    ``generate`` hands to ``GenerationMixin.generate``; ``encoder_input_ids`` is then the encoder's input tensor.
    """
    kwargs = dict(generation_kwargs)
    config_arg: GenerationConfig | None = kwargs.pop("generation_config", None)
    if max_new_tokens is not None:
        kwargs["max_new_tokens"] = max_new_tokens
    has_default_max_length = (
        kwargs.get("max_length") is None
        and (config_arg is None or config_arg.max_length is None)
        and model.generation_config.max_length is None
    )
    has_default_min_length = (
        kwargs.get("min_length") is None
        and (config_arg is None or config_arg.min_length is None)
        and model.generation_config.min_length is None
    )
    config, model_kwargs = model._prepare_generation_config(config_arg, **kwargs)
    model_kwargs = {k: v for k, v in model_kwargs.items() if v is not None}
    if model_kwargs:
        raise TypeError(
            f"unexpected generation arguments {sorted(model_kwargs)}: Seq2SeqSpeculator.generate accepts "
            "GenerationConfig fields (for example min_new_tokens, no_repeat_ngram_size, repetition_penalty)"
        )
    for name, greedy_value in _NOT_GREEDY.items():
        if name == "do_sample" and allow_sampling:
            continue
        value = getattr(config, name, greedy_value)
        if value is not None and value != greedy_value:
            raise ValueError(
                f"{name}={value!r} is not supported; Seq2SeqSpeculator.generate reproduces greedy search and "
                f"multinomial sampling only (expected {name}={greedy_value!r})"
            )
    for name in _UNSUPPORTED:
        if getattr(config, name, None) is not None:
            raise ValueError(f"{name} is not supported by Seq2SeqSpeculator.generate")
    # These processors keep the whole batch's source ids, which no longer line up once finished rows leave.
    if config.encoder_repetition_penalty not in (None, 1.0):
        raise ValueError("encoder_repetition_penalty is not supported by Seq2SeqSpeculator.generate")
    if config.encoder_no_repeat_ngram_size not in (None, 0):
        raise ValueError("encoder_no_repeat_ngram_size is not supported by Seq2SeqSpeculator.generate")

    batch_size = encoder_input_ids.shape[0]
    device = encoder_input_ids.device
    prompt_length = 1 if decoder_prompt is None else int(decoder_prompt.shape[1])
    model._prepare_special_tokens(config, True, device=device, batch_size=batch_size)
    config = model._prepare_generated_length(
        generation_config=config,
        has_default_max_length=has_default_max_length,
        has_default_min_length=has_default_min_length,
        model_input_name=model_input_name,
        input_ids_length=prompt_length,
        inputs_tensor=encoder_input_ids,
    )
    processors = model._get_logits_processor(
        generation_config=config,
        input_ids_seq_length=prompt_length,
        encoder_input_ids=encoder_input_ids,
        prefix_allowed_tokens_fn=None,
        logits_processor=logits_processor if logits_processor is not None else LogitsProcessorList(),
        device=device,
        model_kwargs={},
    )
    processors = with_cached_masks(processors)  # same scores, without rebuilding masks per call

    start = config._decoder_start_token_tensor
    if start is None:
        raise ValueError("the model's generation config has no decoder_start_token_id")
    start_ids = start.flatten().unique()
    if start_ids.numel() != 1:
        raise ValueError("per-row decoder start tokens are not supported")
    eos = config._eos_token_tensor
    eos_ids = tuple(int(t) for t in eos.flatten().tolist()) if eos is not None else ()
    pad = config._pad_token_tensor
    if pad is None:
        raise ValueError("the model's generation config has neither pad_token_id nor eos_token_id")
    max_new = int(config.max_length) - prompt_length
    if max_new <= 0:
        raise ValueError(f"max_length={config.max_length} leaves no room for new tokens")
    return GreedyPlan(
        decoder_start_token_id=int(start_ids.item()),
        eos_token_ids=eos_ids,
        pad_token_id=int(pad.item()),
        max_new_tokens=max_new,
        logits_processor=processors,
        generation_config=config,
        do_sample=bool(config.do_sample),
        decoder_prompt=decoder_prompt,
    )
