"""Distil a layer draft (``own_layers.layer_draft``) on the user's own inputs: the draft learns the big model's greedy
next token, where the speculative loop needs it to agree.

Each batch of inputs is labelled once by the big model: its greedy output (``generate``, as the speculator will
reproduce it), the encoder output (the draft reads it, so it is kept, not recomputed) and the big model's top-k
next-token distribution at every position of that output. Training then runs the draft alone, teacher-forced on
the big model's output: cross-entropy with the big model's greedy token plus ``kl_weight`` times the KL divergence
from its top-k distribution. Only the draft's own layers train; everything it shares with the big model is left as
it was (no gradient reaches it). A share of the batches is held out, and the draft's agreement with the big model
there (its next token equal to the big model's, teacher-forced) is measured before and after.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import ModelOutput

from seq2spec.drafts.own_layers import own_layer_list

_ENCODER_INPUTS = ("input_ids", "input_features", "input_values", "inputs_embeds", "pixel_values")


@dataclass(frozen=True)
class DistillOptions:
    """How a layer draft is distilled."""

    steps: int = 600
    learning_rate: float = 5e-4
    kl_weight: float = 1.0
    top_k: int = 16
    max_new_tokens: int = 128
    held_out: float = 0.1  # share of the batches kept out of training to measure agreement on
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 0 or self.top_k < 1 or self.max_new_tokens < 1 or self.learning_rate <= 0:
            raise ValueError("steps must be >= 0, top_k and max_new_tokens >= 1, learning_rate > 0")
        if not 0 <= self.held_out < 1:
            raise ValueError(f"held_out is a share of the batches in [0, 1), got {self.held_out}")


@dataclass
class DistillStats:
    """What one distillation did and what it reached."""

    batches: int = 0
    held_out_batches: int = 0
    labelled_tokens: int = 0
    steps: int = 0
    labelling_seconds: float = 0.0
    training_seconds: float = 0.0
    agreement_before: float | None = None  # on the held-out batches; None when none are held out
    agreement_after: float | None = None
    first_loss: float | None = None
    last_loss: float | None = None  # mean over the last tenth of the steps


@dataclass
class LabelledBatch:
    """One batch as the big model decodes it: what the draft reads and what it should answer."""

    extra: dict[str, torch.Tensor]  # the draft's inputs besides the encoder output (its attention mask)
    encoder_output: ModelOutput  # as the big model's encoder returned it
    decoder_input_ids: torch.Tensor
    targets: torch.Tensor  # the big model's greedy next token; -100 past each row's end
    top_log_probs: torch.Tensor  # the big model's top-k next-token log-probabilities, renormalised over the k
    top_ids: torch.Tensor

    @property
    def tokens(self) -> int:
        return int((self.targets != -100).sum())


def _end_ids(eos: int | list[int] | None) -> list[int]:
    return [eos] if isinstance(eos, int) else list(eos or [])


def _kept_targets(sequences: torch.Tensor, ends: list[int], prompt_length: int) -> torch.Tensor:
    """``sequences[:, 1:]`` with every token after a row's first end token, and the forced prompt, set to -100."""
    targets = sequences[:, 1:].clone()
    ended = torch.zeros_like(targets, dtype=torch.bool)
    if ends:
        is_end = torch.isin(targets, torch.tensor(ends, device=targets.device))
        ended[:, 1:] = is_end.cumsum(dim=1)[:, :-1] > 0
    ended[:, : max(prompt_length - 1, 0)] = True
    return targets.masked_fill(ended, -100)


def _encoder_output(output: object) -> ModelOutput:
    return output if isinstance(output, ModelOutput) else BaseModelOutput(last_hidden_state=output[0])


@torch.no_grad()
def label_batch(
    big: PreTrainedModel, inputs: dict[str, torch.Tensor], options: DistillOptions, **generation_kwargs
) -> LabelledBatch:
    """The big model's greedy output for ``inputs`` and its next-token distribution along it. The encoder output is
    the one ``generate`` computed (caught as the encoder returns it, with whatever the family's output carries: a
    speech encoder's subsampled mask, a mixture of experts' router logits)."""
    inputs = {name: value.to(big.device) for name, value in inputs.items()}
    encoded: list[ModelOutput] = []
    hook = big.get_encoder().register_forward_hook(lambda _module, _args, output: encoded.append(output))
    try:
        sequences = big.generate(
            **inputs, do_sample=False, num_beams=1, max_new_tokens=options.max_new_tokens, **generation_kwargs
        )
    finally:
        hook.remove()
    if len(encoded) != 1:
        raise ValueError(f"{type(big).__name__}'s generate ran its encoder {len(encoded)} times, not once")
    prompt = generation_kwargs.get("decoder_input_ids")
    prompt_length = prompt.shape[1] if isinstance(prompt, torch.Tensor) else 1
    extra = {name: value for name, value in inputs.items() if name not in _ENCODER_INPUTS}
    ends = generation_kwargs.get("eos_token_id", big.generation_config.eos_token_id)  # where generate stopped rows
    encoder_output = _encoder_output(encoded[0])
    decoder_input_ids = sequences[:, :-1]
    logits = big(encoder_outputs=encoder_output, decoder_input_ids=decoder_input_ids, **extra).logits.float()
    top = logits.log_softmax(dim=-1).topk(options.top_k, dim=-1)
    return LabelledBatch(
        extra=extra,
        encoder_output=encoder_output,
        decoder_input_ids=decoder_input_ids,
        targets=_kept_targets(sequences, _end_ids(ends), prompt_length),
        top_log_probs=top.values.log_softmax(dim=-1),
        top_ids=top.indices,
    )


def _draft_logits(draft: PreTrainedModel, batch: LabelledBatch) -> torch.Tensor:
    output = draft(
        encoder_outputs=batch.encoder_output,
        decoder_input_ids=batch.decoder_input_ids,
        use_cache=False,
        **batch.extra,
    )
    return output.logits.float()


def distillation_loss(logits: torch.Tensor, batch: LabelledBatch, kl_weight: float) -> torch.Tensor:
    """Cross-entropy with big's greedy tokens plus ``kl_weight`` x KL(big's top-k || draft), per kept token."""
    kept = batch.targets != -100
    log_probs = logits.log_softmax(dim=-1)
    cross_entropy = F.nll_loss(log_probs[kept], batch.targets[kept])
    if kl_weight == 0:
        return cross_entropy
    teacher = batch.top_log_probs[kept]
    student = log_probs[kept].gather(-1, batch.top_ids[kept])
    divergence = (teacher.exp() * (teacher - student)).sum(dim=-1).mean()
    return cross_entropy + kl_weight * divergence


@torch.no_grad()
def agreement(draft: PreTrainedModel, batches: list[LabelledBatch]) -> float | None:
    """Share of the big model's greedy tokens the draft predicts, teacher-forced on the big model's output."""
    if not batches:
        return None
    hits = total = 0
    for batch in batches:
        with _autocast(draft.dtype, draft.device):
            predicted = _draft_logits(draft, batch).argmax(dim=-1)
        kept = batch.targets != -100
        hits += int((predicted[kept] == batch.targets[kept]).sum())
        total += int(kept.sum())
    return hits / max(total, 1)


def _autocast(dtype: torch.dtype, device: torch.device):
    """Half-precision models run the draft under autocast (its own layers keep float32 weights while they train)."""
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


@contextlib.contextmanager
def _only_own_layers_train(draft: PreTrainedModel):
    """Gradients for the draft's own layers only: what it shares with the big model is frozen meanwhile, and its
    ``requires_grad`` flags are restored afterwards."""
    own = {id(parameter) for parameter in own_layer_list(draft).parameters()}
    shared = [p for p in draft.parameters() if id(p) not in own and p.requires_grad]
    for parameter in shared:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter in shared:
            parameter.requires_grad_(True)


def distill_layer_draft(
    big: PreTrainedModel,
    draft: PreTrainedModel,
    batches: Iterable[dict[str, torch.Tensor] | LabelledBatch],
    options: DistillOptions | None = None,
    progress: Callable[[str], None] | None = None,
    **generation_kwargs,
) -> DistillStats:
    """Train ``draft``'s own layers (a ``layer_draft`` of ``big``) to propose ``big``'s greedy tokens for inputs like
    ``batches`` (each a dict of model inputs, as a tokenizer or feature extractor returns them, labelled here with
    the same ``generation_kwargs`` as the speculator will be given, e.g. ``forced_bos_token_id``; or a
    ``label_batch`` result, to label once for several drafts). Returns its statistics."""
    options = options or DistillOptions()
    if big.config.model_type == "whisper":
        raise ValueError(
            "Whisper drafts are distilled on speech with recipes/distill_whisper_draft.py (transcripts with their "
            "language, task and timestamp tokens); distill_layer_draft takes text and other speech models"
        )
    stats, started = DistillStats(), time.perf_counter()
    labelled = [
        item if isinstance(item, LabelledBatch) else label_batch(big, item, options, **generation_kwargs)
        for item in batches
    ]
    if not labelled:
        raise ValueError("distillation needs at least one batch of inputs")
    stats.labelling_seconds = time.perf_counter() - started
    order = random.Random(options.seed)
    order.shuffle(labelled)
    # at least one batch held out when asked for (and there are two), never all of them
    held = min(max(round(len(labelled) * options.held_out), 1 if options.held_out else 0), len(labelled) - 1)
    held_out, train = labelled[:held], [batch for batch in labelled[held:] if batch.tokens]
    if not train:
        raise ValueError("the big model wrote no tokens for the training batches: nothing to distil")
    stats.batches, stats.held_out_batches = len(labelled), held
    stats.labelled_tokens = sum(batch.tokens for batch in labelled)
    stats.agreement_before = agreement(draft, held_out)
    losses = _train(draft, train, options, progress)
    stats.steps, stats.training_seconds = len(losses), time.perf_counter() - started - stats.labelling_seconds
    if losses:
        tail = losses[-max(len(losses) // 10, 1) :]
        stats.first_loss, stats.last_loss = losses[0], sum(tail) / len(tail)
    stats.agreement_after = agreement(draft, held_out)
    return stats


def _train(
    draft: PreTrainedModel,
    batches: list[LabelledBatch],
    options: DistillOptions,
    progress: Callable[[str], None] | None,
) -> list[float]:
    layers = own_layer_list(draft)
    dtype, device = draft.dtype, draft.device
    dtypes = [parameter.dtype for parameter in layers.parameters()]  # a model may keep some in float32 (T5's wo)
    parameters = list(layers.parameters())
    for parameter in parameters:
        parameter.data = parameter.data.float()  # float32 master weights, whatever the big model's dtype
    optimizer = torch.optim.AdamW(parameters, lr=options.learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / max(options.steps, 1))
    rng = random.Random(options.seed + 1)
    losses: list[float] = []
    try:
        with torch.enable_grad(), _only_own_layers_train(draft):
            for step in range(options.steps):
                if step % len(batches) == 0:
                    rng.shuffle(batches)
                batch = batches[step % len(batches)]
                with _autocast(dtype, device):
                    loss = distillation_loss(_draft_logits(draft, batch), batch, options.kl_weight)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(parameters, 1.0)
                optimizer.step()
                schedule.step()
                losses.append(float(loss.detach()))
                if progress is not None and (step + 1) % 50 == 0:
                    progress(f"step {step + 1}/{options.steps}: loss {sum(losses[-50:]) / 50:.3f}")
    finally:
        for parameter, kept in zip(parameters, dtypes, strict=True):
            parameter.grad = None
            parameter.data = parameter.data.to(kept)
    return losses
