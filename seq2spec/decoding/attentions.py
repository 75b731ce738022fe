"""The attention weights ``generate(output_attentions=True)`` returns, from one forward over the decoded sequences.

``generate`` records, at each step, the attention of the positions it fed: the whole prompt at the first step, then
one token per step, finished rows fed padding until every row ends. Whisper reads the cross-attention of its
alignment heads from them to time each token (``return_token_timestamps``, word timestamps). The speculative loop
feeds positions in other groupings and stops feeding finished rows, so after decoding, one forward of the big model
over the decoded sequences (the last token excluded: no step fed it) computes the same weights for every position
at once, causally masked exactly as the steps were; they are then cut into ``generate``'s per-step layout.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

# per step, per layer: [rows, heads, positions fed at that step, keys]
StepAttentions = tuple[tuple[torch.Tensor, ...], ...]


@torch.no_grad()
def attentions_as_generate(
    model: PreTrainedModel,
    encoder_hidden_states: torch.Tensor,
    sequences: torch.Tensor,
    prompt_length: int,
    prompt_padding: tuple[int, ...],
    *,
    numbered_by_mask: bool = True,
    encoder_output_type: type = BaseModelOutput,
) -> tuple[StepAttentions, StepAttentions]:
    """``(decoder_attentions, cross_attentions)`` as ``generate`` lays them out for ``sequences`` ``[rows, P + T]``:
    ``T`` steps, the first covering the ``P`` prompt positions. Rows with ``prompt_padding`` are masked and
    positioned as ``generate`` does for a left-padded prompt (``numbered_by_mask``: Whisper's positions count real
    tokens only; other families number padding slots too)."""
    fed = sequences[:, :-1]
    arguments = {}
    if any(prompt_padding):
        pad = torch.tensor(prompt_padding, device=fed.device)
        mask = (torch.arange(fed.shape[1], device=fed.device)[None, :] >= pad[:, None]).long()
        arguments = {"decoder_attention_mask": mask}
        if numbered_by_mask:
            arguments["decoder_position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
    output = model(
        encoder_outputs=encoder_output_type(last_hidden_state=encoder_hidden_states),
        decoder_input_ids=fed,
        output_attentions=True,
        use_cache=False,
        **arguments,
    )
    if output.cross_attentions is None or any(layer is None for layer in output.cross_attentions):
        raise RuntimeError(
            "the big model returned no attention weights; load it with attn_implementation='eager' to get them"
        )
    steps = sequences.shape[1] - prompt_length
    spans = [(0, prompt_length)] + [(prompt_length + s - 1, prompt_length + s) for s in range(1, steps)]
    decoder = tuple(
        tuple(layer[:, :, start:stop, :stop] for layer in output.decoder_attentions) for start, stop in spans
    )
    cross = tuple(tuple(layer[:, :, start:stop] for layer in output.cross_attentions) for start, stop in spans)
    return decoder, cross
