"""One model's decoder over one batch: its caches, each row's padding, and the encoder output it reads."""

from __future__ import annotations

from contextlib import nullcontext

import torch
from transformers import DynamicCache, EncoderDecoderCache, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from seq2spec.decoding import cache as cache_ops
from seq2spec.decoding.families import Family, row_positions
from seq2spec.decoding.head import BigModelHead
from seq2spec.decoding.step import DecoderStep
from seq2spec.decoding.transfer import to_device


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
    ) -> None:
        self.model = model
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

    def pad_prompt(self, padding: list[int]) -> None:
        """Before the first forward: row ``r``'s first ``padding[r]`` tokens are padding (a left-padded prompt)."""
        if self.cache_length:
            raise RuntimeError("pad_prompt applies before the first forward only")
        self.padding = list(padding)
        self.pad = torch.tensor(self.padding, dtype=torch.long, device=self.device)

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
        mask = None
        if padded:  # a row's padding is in its cache, or (a padded prompt) in the tokens fed first
            mask = (torch.arange(self.cache_length + length, device=self.device)[None, :] >= self.pad[:, None]).long()
        sliced_head = self.head.installed(self.model) if self.head is not None else nullcontext()
        with row_positions(self.model, self.family, self.pad if padded else None), sliced_head:
            if self.exact is not None:
                pad = self.pad if padded else None
                return self.exact(tokens, self.cache, self.encoder_hidden_states, self.encoder_attention_mask, pad)
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
                    encoder_outputs=BaseModelOutput(last_hidden_state=self.encoder_hidden_states),
                    attention_mask=self.encoder_attention_mask,
                    decoder_input_ids=tokens,
                    decoder_attention_mask=mask,
                    **cache_ops.cache_argument(self.model, self.cache),
                    use_cache=True,
                )
        return output.logits.float()

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
        self.encoder_hidden_states = self.encoder_hidden_states.index_select(0, index)
        if self.encoder_attention_mask is not None:
            self.encoder_attention_mask = self.encoder_attention_mask.index_select(0, index)
        self._trim_common_padding()

    def _trim_common_padding(self) -> None:
        common = min(self.padding) if self.padding else 0
        if common > 0:
            cache_ops.drop_first_slots(self.cache, common)
            self.padding = [pad - common for pad in self.padding]
            self.pad = self.pad - common
