"""One model's decoder over one batch: its caches, each row's padding, and the encoder output it reads."""

from __future__ import annotations

import torch
from transformers import DynamicCache, EncoderDecoderCache, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from seq2spec import cache as cache_ops
from seq2spec.families import Family, row_positions
from seq2spec.lean_t5 import LeanT5Decoder


class DecoderRunner:
    """Feeds tokens to a decoder with a per-row, left-padded self-attention cache.

    ``forward`` appends the given tokens after every row's last kept entry; ``keep`` then says how many of them
    each row keeps; ``select`` drops finished rows from every tensor the runner holds. With ``lean_step`` (drafts
    only, see ``lean_t5.py``) the decoder step runs there instead of through the model's own forward.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        family: Family,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None,
        lean_step: LeanT5Decoder | None = None,
    ) -> None:
        self.model = model
        self.lean_step = lean_step
        self.family = family
        self.device = encoder_hidden_states.device
        self.encoder_hidden_states = encoder_hidden_states
        self.encoder_attention_mask = encoder_attention_mask
        self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        self.pad = torch.zeros(encoder_hidden_states.shape[0], dtype=torch.long, device=self.device)
        self.forward_calls = 0
        self.row_forwards = 0

    @property
    def cache_length(self) -> int:
        return self.cache.self_attention_cache.get_seq_length()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (float32, ``[rows, len, vocab]``) for ``tokens`` appended to each row's kept entries."""
        tokens = tokens.to(self.device)
        rows, length = tokens.shape
        self.forward_calls += 1
        self.row_forwards += rows
        if self.lean_step is not None:
            return self.lean_step(tokens, self.cache, self.encoder_hidden_states, self.encoder_attention_mask, self.pad)
        mask = None
        if bool(self.pad.any()):
            slots = torch.arange(self.cache_length, device=self.device)[None, :] >= self.pad[:, None]
            mask = torch.cat([slots, slots.new_ones(rows, length)], dim=1).long()
        with row_positions(self.model, self.family, self.pad):
            if self.family.decoder_only:
                output = self.model(
                    input_ids=tokens,
                    attention_mask=mask,
                    encoder_outputs=(self.encoder_hidden_states,),
                    past_key_values=self.cache,
                    use_cache=True,
                )
            else:
                output = self.model(
                    encoder_outputs=BaseModelOutput(last_hidden_state=self.encoder_hidden_states),
                    attention_mask=self.encoder_attention_mask,
                    decoder_input_ids=tokens,
                    decoder_attention_mask=mask,
                    past_key_values=self.cache,
                    use_cache=True,
                )
        return output.logits.float()

    def keep(self, kept: torch.Tensor, fed: int) -> None:
        """Of the ``fed`` tokens of the last forward(s), row ``r`` keeps the first ``kept[r]``."""
        self.pad += cache_ops.drop_last_entries(self.cache, (fed - kept).to(self.device))
        self._trim_common_padding()

    def select(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` of the batch."""
        rows = rows.to(self.device)
        cache_ops.select_rows(self.cache, rows)
        self.pad = self.pad.index_select(0, rows)
        self.encoder_hidden_states = self.encoder_hidden_states.index_select(0, rows)
        if self.encoder_attention_mask is not None:
            self.encoder_attention_mask = self.encoder_attention_mask.index_select(0, rows)
        self._trim_common_padding()

    def _trim_common_padding(self) -> None:
        common = int(self.pad.min()) if self.pad.numel() else 0
        if common > 0:
            cache_ops.drop_first_slots(self.cache, common)
            self.pad -= common
