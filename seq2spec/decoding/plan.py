"""What the loop must reproduce, read from the arguments ``generate`` hands to its decoding method.

seq2spec runs inside transformers' own ``generate(..., custom_generate=...)``: ``generate`` resolves the generation
config (length limits, special tokens), runs the encoder, builds the decoder prompt and the logits processors, and
then calls the decoding method with all of them. Token-for-token identity with ``generate`` follows from using
exactly those: this module checks they describe greedy search or multinomial sampling and gathers them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList
from transformers.generation.stopping_criteria import EosTokenCriteria, MaxLengthCriteria

from seq2spec.decoding.processors import PromptNoSpeechDetection, with_cached_masks, with_row_bound

# Settings that change the decoding strategy away from greedy search or multinomial sampling.
_ONE_SEQUENCE = {"num_beams": 1, "num_return_sequences": 1, "num_beam_groups": 1, "penalty_alpha": None}
# Settings with no speculative equivalent: refused rather than silently ignored.
_UNSUPPORTED = ("stop_strings", "max_time", "prompt_lookup_num_tokens", "assistant_early_exit", "watermarking_config")
# Outputs of ``generate`` the loop does not produce (it does return scores, logits and attention weights).
_NOT_RETURNED = ("output_hidden_states",)
# Stopping criteria the loop honours itself (the length limit and the end tokens); anything else is refused.
_BUILT_IN_STOPPING = (MaxLengthCriteria, EosTokenCriteria)


@dataclass(frozen=True)
class GenerationPlan:
    """Everything the speculative loop needs to reproduce ``generate``'s decoding of one batch."""

    prompt: torch.Tensor  # [rows, P]: the decoder's first tokens
    eos_token_ids: tuple[int, ...]
    pad_token_id: int
    max_new_tokens: int
    logits_processor: LogitsProcessorList
    generation_config: GenerationConfig
    # multinomial sampling (``do_sample=True``): the processors then include the temperature/top-k/top-p warpers
    do_sample: bool = False
    # ``return_dict_in_generate``: a ``GenerateEncoderDecoderOutput``, with the emitted tokens' processed scores
    # (``output_scores``), raw logits (``output_logits``) and attention weights (``output_attentions``) when asked for
    return_dict: bool = False
    output_scores: bool = False
    output_logits: bool = False
    output_attentions: bool = False

    @property
    def draft_logits_processor(self) -> LogitsProcessorList:
        """The processors a draft's scores go through: all but those that only observe the big model (they return
        the scores unchanged)."""
        return LogitsProcessorList(p for p in self.logits_processor if not isinstance(p, PromptNoSpeechDetection))

    @property
    def prompt_observers(self) -> list[PromptNoSpeechDetection]:
        """Processors that read the big model's logits over the prompt (the loop's first forward computes them)."""
        return [p for p in self.logits_processor if isinstance(p, PromptNoSpeechDetection)]


def check_supported(config: GenerationConfig, *, allow_sampling: bool) -> None:
    """Refuse generation settings the loop cannot reproduce, naming the setting."""
    if config.do_sample and not allow_sampling:
        raise ValueError("do_sample=True is not supported here; Seq2SeqSpeculator reproduces greedy search")
    for name, expected in _ONE_SEQUENCE.items():
        value = getattr(config, name, expected)
        if value is not None and value != expected:
            raise ValueError(
                f"{name}={value!r} is not supported; Seq2SeqSpeculator.generate reproduces greedy search and "
                f"multinomial sampling only (expected {name}={expected!r}); for beam search call the model's own "
                "generate"
            )
    for name in _UNSUPPORTED:
        if getattr(config, name, None) is not None:
            raise ValueError(f"{name} is not supported by Seq2SeqSpeculator.generate")
    for name in _NOT_RETURNED:
        if getattr(config, name, False) and config.return_dict_in_generate:
            raise NotImplementedError(
                f"{name}=True is not supported by Seq2SeqSpeculator.generate (scores, logits and attention weights "
                "are); call the model's own generate for hidden states"
            )


def plan_from_generate(
    input_ids: torch.Tensor,
    logits_processor: LogitsProcessorList,
    stopping_criteria: StoppingCriteriaList | None,
    generation_config: GenerationConfig,
    *,
    allow_sampling: bool = True,
) -> GenerationPlan:
    """The plan for one call of the decoding method: ``input_ids`` is the decoder prompt ``generate`` built."""
    config = generation_config
    check_supported(config, allow_sampling=allow_sampling)
    for criterion in stopping_criteria or ():
        if not isinstance(criterion, _BUILT_IN_STOPPING):
            raise ValueError(
                f"stopping criteria other than the length limit and end tokens are not supported "
                f"(got {type(criterion).__name__})"
            )
    eos = config._eos_token_tensor
    eos_ids = tuple(int(t) for t in eos.flatten().tolist()) if eos is not None else ()
    pad = config._pad_token_tensor
    if pad is None:
        raise ValueError("the model's generation config has neither pad_token_id nor eos_token_id")
    max_new = int(config.max_length) - int(input_ids.shape[1])
    if max_new <= 0:
        raise ValueError(f"max_length={config.max_length} leaves no room for new tokens")
    return GenerationPlan(
        prompt=input_ids,
        eos_token_ids=eos_ids,
        pad_token_id=int(pad.item()),
        max_new_tokens=max_new,
        # the same scores: masks not rebuilt per call, per-row state taken for the rows of each call
        logits_processor=with_row_bound(with_cached_masks(logits_processor)),
        generation_config=config,
        do_sample=bool(config.do_sample),
        return_dict=bool(config.return_dict_in_generate),
        output_scores=bool(config.return_dict_in_generate and config.output_scores),
        output_logits=bool(config.return_dict_in_generate and config.output_logits),
        output_attentions=bool(config.return_dict_in_generate and config.output_attentions),
    )
