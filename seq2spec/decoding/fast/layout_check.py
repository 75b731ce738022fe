"""A check, before a model is decoded, that its decoder gives the same logits in the speculative layout as without it.

The generic path (``families.py``, ``positions.py``) reads how a decoder embeds positions from the modules it holds.
Rather than trust that reading for every family and every future release of transformers, ``LayoutCheck`` runs the
big model's decoder over one sequence twice: once as generate's steps would (the prompt, then one token per
forward), and once as the loop feeds it, two rows of one source that keep different numbers of tokens (so one row
carries unused cache slots on its left and is told its own positions) over three forwards of several tokens (never
more than a decoder may take at once, ``Family.max_fed_tokens``). Every logit must agree within a float tolerance
(the two compute the same numbers in different groupings; ``tolerance`` takes the rounding a third grouping shows on
the same device and dtype); a position numbered wrongly, a mask ignored or a cache the model cannot extend by several
tokens shows as a difference or an error, and the model is refused with that reason before a token is decoded. The
verdict is kept while the model's weights, device, dtype and mode stay the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache, EncoderDecoderCache, PreTrainedModel

from seq2spec.decoding.cache import cache_argument
from seq2spec.decoding.families import Family
from seq2spec.decoding.fast.checked import StateCache, model_state
from seq2spec.decoding.runner import DecoderRunner, EncoderExtras

# source positions a probe row needs at most: cross-attention over more of them checks nothing more of the decoder
PROBE_SOURCE_POSITIONS = 64
# per forward after the prompt: the tokens fed to both rows, and how many of them each row keeps
_SCHEDULE = ((4, (4, 2)), (3, (1, 3)), (3, (3, 2)))
# a single token fed while one row is padded: a round that proposes nothing
_SINGLE_TOKEN = ((4, (4, 2)), (1, (1, 1)))


def tolerance(dtype: torch.dtype, floor: float) -> float:
    """The largest difference accepted, relative to the logits' largest: ten times ``floor`` (how far one forward
    over the whole sequence is from the stepwise one: the rounding of this dtype and device for another grouping of
    the same sums), at least what float32 (1e-4) or half precision (2e-3) rounds away, and never more than rounding
    reaches (float32 5e-3, half precision 4e-2: a decoder that numbers a whole sequence otherwise than its steps
    must not widen the tolerance past what a position numbered wrongly gives)."""
    single = dtype in (torch.float32, torch.float64)
    base, ceiling = (1e-4, 5e-3) if single else (2e-3, 4e-2)
    return max(base, min(10 * floor, ceiling))


@dataclass(frozen=True)
class Verdict:
    """What the check found: why the model cannot be decoded (None: it can), and whether its decoder writes into the
    encoder output it is given (each reader must then be given a copy of its own)."""

    problem: str | None
    writes_encoder_output: bool = False
    # fewest tokens per forward while rows are padded: 2 where the decoder drops its mask for a single token (LED)
    min_padded_width: int = 1


@dataclass(frozen=True)
class ProbeRow:
    """One row of a batch to check on: its decoder prompt (no padding), its encoder output, the encoder's mask and
    the output object's other tensors (none of them is written to)."""

    prompt: torch.Tensor
    encoder_hidden_states: torch.Tensor
    encoder_attention_mask: torch.Tensor | None
    extras: EncoderExtras


class LayoutCheck:
    """Checks each big model once per state; raises ``NotImplementedError`` naming the difference."""

    def __init__(self) -> None:
        self._verdicts: StateCache[Verdict] = StateCache()

    def require(self, model: PreTrainedModel, family: Family, row: ProbeRow) -> Verdict:
        """Raise if ``model`` cannot be decoded in the layout, checked on ``row``; else what the check found."""
        found = self._verdicts.get((id(model), model_state(model)), lambda: layout_difference(model, family, row))
        if found.problem is not None:
            raise NotImplementedError(
                f"{type(model).__name__} (model_type={family.model_type!r}) cannot be decoded speculatively: "
                f"{found.problem}; use the model's own generate"
            )
        return found


@torch.no_grad()
def layout_difference(model: PreTrainedModel, family: Family, row: ProbeRow) -> Verdict:
    """What differs between the layout's logits and those of generate's steps (None: nothing beyond the tolerance),
    and whether a forward writes into its encoder input."""
    prompt, encoder_hidden_states, extras = row.prompt, row.encoder_hidden_states, row.extras
    encoder_attention_mask = row.encoder_attention_mask
    device = encoder_hidden_states.device
    width = prompt.shape[-1]
    schedule = _schedule(width, family.max_fed_tokens)
    continuation = sum(fed for fed, _ in schedule) - width + 1
    sequence = torch.cat([prompt.reshape(1, -1).to(device), _tokens(model, continuation, device)], dim=1)
    try:  # each forward reads a copy of the encoder output: some decoders add to it in place (Moonshine streaming)
        pristine, read = encoder_hidden_states.clone(), encoder_hidden_states.clone()
        reference = _stepwise_logits(model, sequence, width, extras.output(read), encoder_attention_mask)
        writes = not torch.equal(read, pristine)
        scale = max(1.0, float(reference.abs().max()))
        whole = _stepwise_logits(  # the whole sequence in one forward: this dtype's rounding of another grouping
            model, sequence, sequence.shape[1], extras.output(pristine.clone()), encoder_attention_mask
        )
        floor = float((whole - reference).abs().max()) / scale
        layout = _LayoutProbe(model, family, sequence, reference, pristine, encoder_attention_mask, extras, width)
        worst, min_padded_width = layout.worst(schedule, 1), 1
        single_token = _schedule(width, family.max_fed_tokens, _SINGLE_TOKEN)
        single = layout.worst(single_token, 1)
    except Exception as error:  # noqa: BLE001 - any failure of the layout is the reason to refuse the model
        failure = f"{type(error).__name__}: {error}"
        return Verdict(f"its decoder fails when fed several tokens per row over a padded cache ({failure})")
    limit = tolerance(encoder_hidden_states.dtype, floor)
    if single > limit:  # a decoder that drops its mask for one token (LED) is right when fed two: feed it two
        try:
            min_padded_width = 2
            single = layout.worst(single_token, 2)
        except Exception:  # noqa: BLE001 - the difference is the reason given
            pass
        worst = max(worst, single)
    if worst > limit:
        return Verdict(
            f"its logits with rows at different lengths differ from those of generate's one-token steps by "
            f"{worst:.2e} of their largest (tolerance {limit:.1e}): its positions or masks do not follow the rows' "
            "own lengths"
        )
    return Verdict(None, writes_encoder_output=writes, min_padded_width=min_padded_width)


@dataclass(frozen=True)
class _LayoutProbe:
    """One sequence fed as the loop feeds it: two rows of one source, each keeping its own share of every forward."""

    model: PreTrainedModel
    family: Family
    sequence: torch.Tensor
    reference: torch.Tensor  # generate's steps' logits over ``sequence``
    encoder_hidden_states: torch.Tensor
    encoder_attention_mask: torch.Tensor | None
    extras: EncoderExtras
    width: int  # the prompt's

    def worst(self, schedule: list[tuple[int, tuple[int, int]]], min_padded_width: int) -> float:
        """The largest difference from the reference, relative to its largest logit, over ``schedule``."""
        device = self.encoder_hidden_states.device
        both = torch.zeros(2, dtype=torch.long, device=device)  # the one row, twice
        hidden = self.encoder_hidden_states.clone().index_select(0, both)
        mask = self.encoder_attention_mask
        runner = DecoderRunner(
            self.model,
            self.family,
            hidden,
            None if mask is None else mask.index_select(0, both),
            prompt_width=self.width,
            encoder_output=self.extras.rows(both).output(hidden),
            min_padded_width=min_padded_width,
        )
        scale = max(1.0, float(self.reference.abs().max()))
        lengths = [0, 0]  # each row's kept tokens of ``sequence``
        worst = 0.0
        for fed, kept in schedule:
            logits = runner.forward(torch.stack([self.sequence[0, length : length + fed] for length in lengths]))
            for row, length in enumerate(lengths):
                expected = self.reference[0, length : length + fed]
                worst = max(worst, float((logits[row] - expected).abs().max()) / scale)
            runner.keep(list(kept), fed=fed)
            lengths = [length + count for length, count in zip(lengths, kept, strict=True)]
        return worst


def _schedule(
    width: int, max_fed: int | None, plan: tuple[tuple[int, tuple[int, int]], ...] = _SCHEDULE
) -> list[tuple[int, tuple[int, int]]]:
    """Per forward of ``plan``: the tokens fed to both rows (the prompt first) and how many each keeps, no forward
    feeding more than ``max_fed`` tokens beyond what the prompt needs."""
    schedule = []
    for index, (fed, kept) in enumerate(plan):
        room = fed if max_fed is None else max(1, min(fed, max_fed - (width if index == 0 else 0)))
        kept = tuple(min(count, room) for count in kept)
        schedule.append((room + width, (kept[0] + width, kept[1] + width)) if index == 0 else (room, kept))
    return schedule


def _stepwise_logits(
    model: PreTrainedModel, sequence: torch.Tensor, width: int, encoded: object, mask: torch.Tensor | None
) -> torch.Tensor:
    """Generate's own steps over ``sequence``: the prompt (its first ``width`` tokens) in one forward over a fresh
    cache, then one token per forward."""
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    logits = []
    for start, stop in [(0, width), *((column, column + 1) for column in range(width, sequence.shape[1]))]:
        output = model(
            encoder_outputs=encoded,
            attention_mask=mask,
            decoder_input_ids=sequence[:, start:stop],
            **cache_argument(model, cache),
            use_cache=True,
        )
        logits.append(output.logits.float())
    return torch.cat(logits, dim=1)


def _tokens(model: PreTrainedModel, count: int, device: torch.device) -> torch.Tensor:
    """``count`` token ids of the model's vocabulary, none a padding or end token (fixed, for a repeatable check)."""
    vocabulary = int(model.get_output_embeddings().weight.shape[0])
    special = {model.generation_config.pad_token_id, model.config.pad_token_id}
    eos = model.generation_config.eos_token_id
    special.update(eos if isinstance(eos, list) else [eos])
    generator = torch.Generator().manual_seed(0)
    tokens = []
    while len(tokens) < count:
        token = int(torch.randint(0, vocabulary, (1,), generator=generator))
        if token not in special:
            tokens.append(token)
    return torch.tensor([tokens], device=device)
