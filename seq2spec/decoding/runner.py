"""One model's decoder over one batch: its caches, each row's padding, and the encoder output it reads."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch
from transformers import DynamicCache, EncoderDecoderCache, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import ModelOutput

from seq2spec.decoding import cache as cache_ops
from seq2spec.decoding.families import Family
from seq2spec.decoding.fast.head import BigModelHead
from seq2spec.decoding.fast.step import DecoderStep
from seq2spec.decoding.fast.transfer import to_device
from seq2spec.decoding.positions import DecoderPositions, FedPositions


class DecoderRunner:
    """Feeds tokens to a decoder with a per-row, left-padded self-attention cache.

    ``forward`` appends the given tokens after every row's last kept entry (``pad_prompt`` first, when the prompt
    rows are left-padded); ``keep`` then says how many of them
    each row keeps; ``select`` drops finished rows from every tensor the runner holds. With ``step`` (drafts only)
    the decoder step runs there instead of through the model's own forward; with ``head`` (the big model) its
    vocabulary head runs sliced where that was found bit-exact (``head.py``); with ``exact`` (a big T5) the forward
    runs through its bit-exact mirror (``exact_t5.py``). Each row's padding is kept on the host
    as well, so deciding what to shift or trim never waits for the device.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        family: Family,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None,
        step: DecoderStep | None = None,
        head: BigModelHead | None = None,
        exact: DecoderStep | None = None,
        *,
        prompt_width: int = 0,
        encoder_output: object = None,
        min_padded_width: int = 1,
    ) -> None:
        self.model = model
        # fewest tokens fed per forward while rows are padded: 2 for a decoder that drops its attention mask for a
        # single token (LED); the extra token's entry is cut off again at once (``layout_check.py`` finds such decoders)
        self.min_padded_width = min_padded_width
        self.step = step
        self.head = head
        self.exact = exact
        self.family = family
        self.device = encoder_hidden_states.device
        self.encoder_hidden_states = encoder_hidden_states
        self.encoder_attention_mask = encoder_attention_mask
        self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        rows = encoder_hidden_states.shape[0]
        self.padding = [0] * rows  # host copy of ``pad``
        self.pad = torch.zeros(rows, dtype=torch.long, device=self.device)
        self.prompt_pad = self.pad  # the share of ``pad`` that is a left-padded prompt's padding
        self.prompt_padding = [0] * rows  # host copy of ``prompt_pad``
        self.prompt_width = prompt_width
        self.positions = DecoderPositions.of(model) if family.learned_positions else None
        self.encoder_extras = EncoderExtras.of(encoder_output, rows, self.device, encoder_hidden_states.dtype)

    def pad_prompt(self, padding: list[int]) -> None:
        """Before the first forward: row ``r``'s first ``padding[r]`` tokens are padding (a left-padded prompt)."""
        if self.cache_length:
            raise RuntimeError("pad_prompt applies before the first forward only")
        self.padding = list(padding)
        self.pad = torch.tensor(self.padding, dtype=torch.long, device=self.device)
        self.prompt_pad = self.pad.clone()
        self.prompt_padding = list(padding)

    @property
    def cache_length(self) -> int:
        return self.cache.self_attention_cache.get_seq_length()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (float32, ``[rows, len, vocab]``) for ``tokens`` appended to each row's kept entries."""
        tokens = tokens.to(self.device)
        rows, length = tokens.shape
        padded = any(self.padding)
        if self.step is not None:
            pad = self.pad if padded else None
            return self.step(tokens, self.cache, self.encoder_hidden_states, self.encoder_attention_mask, pad)
        if padded and length < self.min_padded_width:
            extra = self.min_padded_width - length
            logits = self.forward(torch.cat([tokens, tokens[:, -1:].expand(rows, extra)], dim=1))[:, :length]
            cache_ops.drop_last_entries(self.cache, [extra] * rows)
            return logits
        mask = None
        if padded:  # a row's padding is in its cache, or (a padded prompt) in the tokens fed first
            mask = (torch.arange(self.cache_length + length, device=self.device)[None, :] >= self.pad[:, None]).long()
        fed = self.fed_positions(tokens, padded)
        self.prompt_width = 0  # only the first forward starts with the prompt
        positions = self.positions.installed(fed) if self.positions is not None else nullcontext()
        sliced_head = self.head.installed(self.model) if self.head is not None else nullcontext()
        with positions, sliced_head:
            if self.exact is not None:
                pad = self.pad if padded else None
                return self.exact(tokens, self.cache, self.encoder_hidden_states, self.encoder_attention_mask, pad)
            extra = self.positions.arguments(fed) if self.positions is not None else {}
            if self.family.decoder_only:
                output = self.model(
                    input_ids=tokens,
                    attention_mask=mask,
                    encoder_outputs=(self.encoder_hidden_states,),
                    **cache_ops.cache_argument(self.model, self.cache),
                    use_cache=True,
                )
            else:
                output = self.model(
                    encoder_outputs=self.encoder_extras.output(self.encoder_hidden_states),
                    attention_mask=self.encoder_attention_mask,
                    decoder_input_ids=tokens,
                    decoder_attention_mask=mask,
                    **cache_ops.cache_argument(self.model, self.cache),
                    use_cache=True,
                    **extra,
                )
        return output.logits.float()

    def fed_positions(self, tokens: torch.Tensor, padded: bool) -> FedPositions | None:
        """Each row's numbers for ``tokens`` as generate numbers them; None where the decoder's own (by cache slot)
        are right for every row: no row padded, and no fairseq numbering (which differs for a block of tokens)."""
        if self.positions is None or (not padded and not self.positions.every_call):
            return None
        cache_length = self.cache_length
        start = cache_length - self.pad
        end = cache_length + tokens.shape[1]
        if self.family.numbering == "slot":  # generate counts a left-padded prompt's padding slots too
            start = start + self.prompt_pad
            end += max(0, max(self.prompt_padding) - min(self.padding))
        return FedPositions(tokens, start, self.prompt_width, end)

    def cross_attention(self, index: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Decoder layer ``index``'s cross-attention keys and values, computed now if no forward has yet, exactly
        as the first forward would (which then reads them); None where only the model's own forward computes them
        (no exact mirror with that ability)."""
        compute = getattr(self.exact, "cross_attention", None)
        if compute is None:
            return None
        return compute(self.cache, index, self.encoder_hidden_states)

    def take_cross_attention(self, index: int, key: torch.Tensor, value: torch.Tensor) -> None:
        """Before the first forward: decoder layer ``index`` attends over these keys and values (another model's,
        from the same projection of the same encoder output) instead of computing its own."""
        if self.cache_length:
            raise RuntimeError("take_cross_attention applies before the first forward only")
        self.cache.cross_attention_cache.update(key, value, index)
        self.cache.is_updated[index] = True

    def keep(self, kept: list[int], fed: int) -> None:
        """Of the ``fed`` tokens of the last forward(s), row ``r`` keeps the first ``kept[r]``."""
        shifts = cache_ops.drop_last_entries(self.cache, [fed - count for count in kept])
        if any(shifts):
            self.padding = [pad + shift for pad, shift in zip(self.padding, shifts, strict=True)]
            self.pad = to_device(self.padding, self.device)
            self._trim_common_padding()

    def select(self, rows: list[int]) -> None:
        """Keep only ``rows`` of the batch."""
        index = to_device(rows, self.device)
        cache_ops.select_rows(self.cache, index)
        self.padding = [self.padding[row] for row in rows]
        self.pad = self.pad.index_select(0, index)
        self.prompt_pad = self.prompt_pad.index_select(0, index)
        self.prompt_padding = [self.prompt_padding[row] for row in rows]
        self.encoder_hidden_states = self.encoder_hidden_states.index_select(0, index)
        self.encoder_extras = self.encoder_extras.rows(index)
        if self.encoder_attention_mask is not None:
            self.encoder_attention_mask = self.encoder_attention_mask.index_select(0, index)
        self._trim_common_padding()

    def _trim_common_padding(self) -> None:
        common = min(self.padding) if self.padding else 0
        if common > 0:
            cache_ops.drop_first_slots(self.cache, common)
            self.padding = [pad - common for pad in self.padding]
            self.pad = self.pad - common


@dataclass(frozen=True)
class EncoderExtras:
    """What a model's forward reads from its encoder output object besides the hidden states: the object's class (a
    mixture-of-experts model's carries router logits) and its other per-row tensors (a speech encoder's attention mask
    over its subsampled frames)."""

    output_type: type = BaseModelOutput
    tensors: tuple[tuple[str, torch.Tensor], ...] = ()

    @staticmethod
    def output_class(output: object) -> type:
        """The class to rebuild ``output`` as (``BaseModelOutput`` for a tuple or an object without hidden states)."""
        kind = type(output)
        if isinstance(output, ModelOutput) and "last_hidden_state" in getattr(kind, "__dataclass_fields__", {}):
            return kind
        return BaseModelOutput

    @classmethod
    def of(cls, output: object, rows: int, device: torch.device, dtype: torch.dtype) -> EncoderExtras:
        """From an encoder output object (None or a tuple: nothing besides the hidden states), on ``device``, floating
        tensors in ``dtype``."""
        kind = cls.output_class(output)
        if kind is BaseModelOutput and not isinstance(output, BaseModelOutput):
            return cls()
        tensors = tuple(
            (name, value.to(device, dtype) if value.is_floating_point() else value.to(device))
            for name, value in output.items()
            if name != "last_hidden_state" and _per_row(value, rows)
        )
        return cls(kind, tensors)

    def output(self, hidden_states: torch.Tensor) -> ModelOutput:
        return self.output_type(last_hidden_state=hidden_states, **dict(self.tensors))

    def rows(self, index: torch.Tensor) -> EncoderExtras:
        selected = tuple((name, value.index_select(0, index.to(value.device))) for name, value in self.tensors)
        return EncoderExtras(self.output_type, selected)


def _per_row(value: object, rows: int) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == rows
