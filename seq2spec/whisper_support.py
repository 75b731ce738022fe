"""Whisper: its ``generate`` prepares everything (decoder prompt with language and task tokens, suppress and
timestamp logits processors, 30-second windows for long-form audio, seeking by timestamps) and then calls
``GenerationMixin.generate`` for each batch of windows. Inside ``inner_generate_replaced`` that inner call runs
seq2spec's speculative loop instead, with exactly the prompt, generation config and logits processors Whisper
handed it. Whisper's own code does everything else, so the result is what ``big.generate`` returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import GenerationMixin, PreTrainedModel

from seq2spec.generation_setup import GreedyPlan, plan_greedy_generation

_LOCK = threading.RLock()

# decode(encoder_inputs, plan) -> [rows, prompt + new tokens], as GenerationMixin.generate returns for greedy search
Decode = Callable[[torch.Tensor, GreedyPlan], torch.Tensor]


def _plan_inner_call(model: PreTrainedModel, inputs: torch.Tensor, arguments: dict[str, Any]) -> GreedyPlan:
    arguments = dict(arguments)
    config = arguments.get("generation_config")
    wants_extras = any(
        arguments.get(name) for name in ("output_attentions", "output_scores", "return_dict_in_generate")
    )
    if wants_extras or (config is not None and config.return_dict_in_generate):
        raise NotImplementedError(
            "this Whisper call needs scores or token timestamps from generate (temperature fallback, "
            "logprob_threshold, return_token_timestamps, ...), which Seq2SeqSpeculator does not produce"
        )
    for name in ("stopping_criteria", "prefix_allowed_tokens_fn", "assistant_model", "streamer"):
        value = arguments.pop(name, None)
        if value:  # None or an empty list: nothing to honour
            raise NotImplementedError(f"Seq2SeqSpeculator does not support Whisper generate with {name}")
    arguments.pop("synced_gpus", None)
    if arguments.get("decoder_attention_mask") is not None:
        raise NotImplementedError(
            "per-row decoder prompts of different lengths (condition_on_prev_tokens=True) are not supported"
        )
    arguments.pop("decoder_attention_mask", None)
    arguments.pop("attention_mask", None)  # Whisper's encoder reads every frame of a window
    decoder_prompt = arguments.pop("decoder_input_ids", None)
    logits_processor = arguments.pop("logits_processor", None)
    plan = plan_greedy_generation(
        model,
        inputs,
        None,
        arguments,
        decoder_prompt=decoder_prompt,
        logits_processor=logits_processor,
        model_input_name="input_features",
    )
    if plan.generation_config.return_dict_in_generate:
        raise NotImplementedError("Seq2SeqSpeculator returns token tensors only (return_dict_in_generate is set)")
    return plan


@contextmanager
def inner_generate_replaced(model: PreTrainedModel, decode: Decode) -> Iterator[None]:
    """While active, ``GenerationMixin.generate`` called on ``model`` runs ``decode``; other models are untouched."""
    original = GenerationMixin.generate

    def generate(self, inputs=None, generation_config=None, logits_processor=None, **kwargs):
        if self is not model:
            return original(self, inputs, generation_config, logits_processor, **kwargs)
        kwargs["generation_config"] = generation_config
        kwargs["logits_processor"] = logits_processor
        with torch.inference_mode():
            return decode(inputs, _plan_inner_call(model, inputs, kwargs))

    with _LOCK:
        GenerationMixin.generate = generate
        try:
            yield
        finally:
            GenerationMixin.generate = original
