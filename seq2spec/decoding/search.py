"""The speculative loop as a decoding method for transformers' ``generate(..., custom_generate=...)``.

``generate`` (and Whisper's ``generate``, once per batch of 30-second windows) prepares the generation config, the
encoder output, the decoder prompt and the logits processors, then calls the decoding method with them. A
``SpeculativeSearch`` is such a method: it builds the batch's proposer and runs the loop, so everything around the
inner decoding is the model's own code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from transformers import GenerationConfig, LogitsProcessorList, PreTrainedModel, StoppingCriteriaList
from transformers.generation.utils import GenerateEncoderDecoderOutput

from seq2spec.decoding.attentions import attentions_as_generate
from seq2spec.decoding.families import Family
from seq2spec.decoding.fast.exact import ExactForwards
from seq2spec.decoding.fast.head import BigModelHead
from seq2spec.decoding.fast.layout_check import PROBE_SOURCE_POSITIONS, LayoutCheck, ProbeRow, Verdict
from seq2spec.decoding.loop import speculative_decode
from seq2spec.decoding.plan import GenerationPlan, plan_from_generate
from seq2spec.decoding.proposal import DecodingBatch, Proposer
from seq2spec.decoding.runner import DecoderRunner, EncoderExtras
from seq2spec.decoding.scores import ScoreRecorder
from seq2spec.decoding.verify import GreedyVerifier, SamplingVerifier, Verifier
from seq2spec.options import Acceptance, SpeculationStats

# make_proposer(batch, stats) -> the proposer for this batch (it may count draft encoder calls in stats)
ProposerFactory = Callable[[DecodingBatch, SpeculationStats], Proposer]


class SpeculativeSearch:
    """A decoding method for ``model.generate(custom_generate=...)`` that runs the speculative loop.

    Statistics of every call add up in ``stats``. ``generator`` drives speculative sampling when the generation
    config samples. ``head`` lets the big model's vocabulary head run sliced where that is bit-exact (``head.py``);
    ``exact`` runs a big T5's or Whisper's decoder forward through its mirror where a probe found it bit-exact
    (``exact.py``).
    ``capture_draft_processing``: on a CUDA device, the draft's logits processing replays as a CUDA graph.
    """

    def __init__(
        self,
        family: Family,
        make_proposer: ProposerFactory,
        *,
        acceptance: Acceptance = "per-row",
        position_limit: int | None = None,
        generator: torch.Generator | None = None,
        stats: SpeculationStats | None = None,
        head: BigModelHead | None = None,
        exact: ExactForwards | None = None,
        capture_draft_processing: bool = False,
        layout_check: LayoutCheck | None = None,
    ) -> None:
        self.family = family
        self.layout_check = layout_check if layout_check is not None else LayoutCheck()
        self.capture_draft_processing = capture_draft_processing
        self.head = head
        self.exact = exact
        self.make_proposer = make_proposer
        self.acceptance = acceptance
        self.position_limit = position_limit
        self.generator = generator
        self.stats = stats if stats is not None else SpeculationStats()

    def __call__(
        self,
        model: PreTrainedModel,
        input_ids: torch.Tensor,
        logits_processor: LogitsProcessorList,
        stopping_criteria: StoppingCriteriaList,
        generation_config: GenerationConfig,
        inputs_tensor: torch.Tensor | None = None,
        **model_kwargs: Any,
    ) -> torch.Tensor | GenerateEncoderDecoderOutput:
        """Called by ``generate``: ``input_ids`` is the decoder prompt, ``inputs_tensor`` the encoder's input."""
        plan = plan_from_generate(input_ids, logits_processor, stopping_criteria, generation_config)
        prompt_padding = left_padding(model_kwargs.get("decoder_attention_mask"), input_ids)
        encoder_outputs = model_kwargs.get("encoder_outputs")
        if encoder_outputs is None:
            raise ValueError("generate passed no encoder output to the decoding method")
        self.stats.big_encoder_calls += 1
        attention_mask = model_kwargs.get("attention_mask")
        if self.family.model_type == "whisper":
            attention_mask = None  # Whisper's encoder reads every frame of a window; its decoder attends to all
        encoder_inputs = inputs_tensor if inputs_tensor is not None else input_ids
        runner, batch = self._runner_and_batch(
            model, plan, input_ids, prompt_padding, encoder_inputs, encoder_outputs, attention_mask, generation_config
        )
        verifier: Verifier = (
            SamplingVerifier(self.generator, self.acceptance) if plan.do_sample else GreedyVerifier(self.acceptance)
        )
        recorder = ScoreRecorder(input_ids.shape[0], plan.pad_token_id, plan.output_scores, plan.output_logits)
        proposer = self.make_proposer(batch, self.stats)
        sequences = speculative_decode(
            runner,
            proposer,
            plan,
            batch,
            self.stats,
            verifier=verifier,
            position_limit=self.position_limit,
            fed_limit=self.family.max_fed_tokens,
            recorder=recorder,
            capture_draft_processing=self.capture_draft_processing and runner.device.type == "cuda",
        )
        if not plan.return_dict:
            return sequences
        return self._output(model, plan, recorder, sequences, input_ids, encoder_outputs, prompt_padding)

    def _runner_and_batch(
        self,
        model: PreTrainedModel,
        plan: GenerationPlan,
        prompt: torch.Tensor,
        prompt_padding: tuple[int, ...],
        encoder_inputs: torch.Tensor,
        encoder_outputs: Any,
        attention_mask: torch.Tensor | None,
        generation_config: GenerationConfig,
    ) -> tuple[DecoderRunner, DecodingBatch]:
        """The big model's runner (its layout checked first) and what the proposer may know of the batch."""
        encoder_hidden_states = encoder_outputs[0]
        verdict = self._check_layout(model, prompt, prompt_padding, encoder_outputs, attention_mask)
        # a decoder that adds to its encoder input in place gets a copy of its own (a draft reads generate's)
        big_hidden_states = encoder_hidden_states.clone() if verdict.writes_encoder_output else encoder_hidden_states
        exact = self.exact.for_model(model) if self.exact is not None else None
        runner = DecoderRunner(
            model,
            self.family,
            big_hidden_states,
            attention_mask,
            head=self.head,
            exact=exact,
            prompt_width=prompt.shape[1],
            encoder_output=encoder_outputs,
            min_padded_width=verdict.min_padded_width,
        )
        batch = DecodingBatch(
            encoder_inputs=encoder_inputs,
            attention_mask=attention_mask,
            encoder_hidden_states=encoder_hidden_states,
            prompt=prompt,
            eos_token_ids=plan.eos_token_ids,
            pad_token_id=plan.pad_token_id,
            do_sample=plan.do_sample,
            generator=self.generator,
            prompt_padding=prompt_padding,
            transcript_start=self._transcript_start(prompt, generation_config),
            encoder_output=encoder_outputs,
            big_cross_attention=runner.cross_attention,
        )
        return runner, batch

    def _check_layout(
        self,
        model: PreTrainedModel,
        prompt: torch.Tensor,
        prompt_padding: tuple[int, ...],
        encoder_outputs: Any,
        attention_mask: torch.Tensor | None,
    ) -> Verdict:
        """Refuse the model before decoding if its decoder disagrees with itself in the layout (``layout_check.py``),
        checked on the least-padded row's prompt and source (its first ``PROBE_SOURCE_POSITIONS`` where nothing
        else in the encoder output is per position: a 30-s Whisper window's 1,500 frames would cost the check some
        200 MB and tell it no more)."""
        row = min(range(prompt.shape[0]), key=lambda index: prompt_padding[index] if prompt_padding else 0)
        start = prompt_padding[row] if prompt_padding else 0
        index = torch.tensor([row], device=prompt.device)
        hidden = encoder_outputs[0]
        extras = EncoderExtras.of(encoder_outputs, hidden.shape[0], hidden.device, hidden.dtype).rows(index)
        mask = None if attention_mask is None else attention_mask[row : row + 1]
        hidden = hidden[row : row + 1]
        kept = PROBE_SOURCE_POSITIONS
        if not extras.tensors and hidden.shape[1] > kept and (mask is None or bool(mask[:, :kept].all())):
            hidden, mask = hidden[:, :kept], None if mask is None else mask[:, :kept]
        probe = ProbeRow(prompt[row, start:], hidden, mask, extras)
        return self.layout_check.require(model, self.family, probe)

    def _output(
        self,
        model: PreTrainedModel,
        plan: GenerationPlan,
        recorder: ScoreRecorder,
        sequences: torch.Tensor,
        prompt: torch.Tensor,
        encoder_outputs: Any,
        prompt_padding: tuple[int, ...],
    ) -> GenerateEncoderDecoderOutput:
        """``generate``'s dictionary output: the sequences with the scores, logits and attention weights asked for."""
        steps = sequences.shape[1] - prompt.shape[1]
        output = GenerateEncoderDecoderOutput(
            sequences=sequences, scores=recorder.scores(steps), logits=recorder.logits(steps)
        )
        if plan.output_attentions:
            output.decoder_attentions, output.cross_attentions = attentions_as_generate(
                model,
                encoder_outputs[0],
                sequences,
                prompt.shape[1],
                prompt_padding,
                numbered_by_mask=self.family.numbering == "mask",
                encoder_output_type=EncoderExtras.output_class(encoder_outputs),
            )
            output.encoder_attentions = getattr(encoder_outputs, "attentions", None)
        return output

    def _transcript_start(self, prompt: torch.Tensor, config: GenerationConfig) -> int:
        """Whisper: the last prompt column holding the start-of-transcript token in every row (0 if none)."""
        start_token = config.decoder_start_token_id
        if self.family.model_type != "whisper" or start_token is None:
            return 0
        columns = (prompt == start_token).all(dim=0).nonzero().flatten().tolist()
        return columns[-1] if columns else 0


def left_padding(mask: torch.Tensor | None, prompt: torch.Tensor) -> tuple[int, ...]:
    """Each row's number of leading padding tokens, read from a decoder attention mask (() for no mask).

    Whisper pads previous-text prompts of different lengths on the left; any other mask shape is refused."""
    if mask is None:
        return ()
    if mask.shape != prompt.shape:
        raise ValueError(
            f"decoder_attention_mask has shape {tuple(mask.shape)} but the decoder prompt {tuple(prompt.shape)}"
        )
    real = mask.bool()
    padding = (~real).long().cumprod(dim=1).sum(dim=1)
    positions = torch.arange(prompt.shape[1], device=mask.device)[None, :]
    if not torch.equal(real, positions >= padding[:, None]) or bool((padding >= prompt.shape[1]).any()):
        raise NotImplementedError(
            "decoder_attention_mask must mark left padding of the decoder prompt only (each row: padding, then "
            "at least one real token)"
        )
    return tuple(padding.tolist())
