"""A draft step's logits processing as one replayed CUDA graph.

Every draft step runs ``generate``'s logits processors on the draft's scores, so that it proposes what the big
model could emit. Whisper's processors (token suppression, the timestamp rules) are some fifty small operations per
call, which on a GPU cost the host more than the draft's own step once that replays as a CUDA graph. seq2spec's
versions of them take all rows at once from right-padded prefixes (``process_ragged``) and never look at the device,
so the whole chain can be captured over fixed tensors: every row of the batch (finished rows too: what is computed
for them is never read), prefixes as wide as any row can reach, each row's length, and the scores.

Per step the host then copies the rows' tokens, writes the candidates after them, copies the scores in and replays.
Before first use the graph's result is compared with the eager processing (``torch.equal``); on any difference, or
if capture fails, the processing stays eager. A draft's processed scores only choose candidates: the big model's
own scores, processed eagerly, decide every output token.
"""

from __future__ import annotations

import logging

import torch
from transformers import LogitsProcessorList

from seq2spec.decoding.processors import (
    CachedSuppressTokens,
    CachedSuppressTokensAtBegin,
    PromptNoSpeechDetection,
    WhisperTimestampRules,
)

logger = logging.getLogger(__name__)

# processors whose ``process_ragged`` is a fixed sequence of device operations on a CUDA device (no host reads)
CAPTURABLE = (CachedSuppressTokens, CachedSuppressTokensAtBegin, WhisperTimestampRules, PromptNoSpeechDetection)


def capturable(processors: LogitsProcessorList) -> bool:
    """Whether every processor in the list can be captured (an empty list needs no processing at all)."""
    return len(processors) > 0 and all(type(processor) in CAPTURABLE for processor in processors)


class CapturedStepProcessing:
    """``processors`` over a batch's rows after their tokens in ``tokens`` (``[rows, capacity + 1]``, right-padded,
    lengths in ``lengths``) plus each step's candidates, on fixed tensors; ``graphs``: replayed as a CUDA graph."""

    def __init__(
        self,
        processors: LogitsProcessorList,
        tokens: torch.Tensor,
        lengths: torch.Tensor,
        vocabulary: int,
        *,
        graphs: bool,
    ) -> None:
        rows, width = tokens.shape
        self.processors = processors
        self.tokens, self.lengths = tokens, lengths
        self.graphs = graphs
        # a row's candidates may run past the buffer's capacity (its extra tokens are cut later): room for them
        self.prefixes = torch.zeros((rows, 2 * width), dtype=tokens.dtype, device=tokens.device)
        self.prefix_lengths = torch.zeros_like(lengths)
        self.scores = torch.zeros((rows, vocabulary), device=tokens.device)
        self.graph: torch.cuda.CUDAGraph | None = None

    def _process(self) -> None:
        processed = self.scores
        for processor in self.processors:
            processed = processor.process_ragged(self.prefixes, self.prefix_lengths, processed)
        if processed.data_ptr() != self.scores.data_ptr():
            self.scores.copy_(processed)

    def load(self, rows: torch.Tensor, candidates: torch.Tensor, scores: torch.Tensor) -> None:
        """Write the step's inputs into the fixed tensors: batch rows ``rows`` (live rows, in the scores' order)
        are followed by ``candidates``; ``scores`` are theirs."""
        width = self.tokens.shape[1]
        self.prefixes[:, :width].copy_(self.tokens)
        count = candidates.shape[1]
        if count:
            columns = self.lengths.index_select(0, rows)[:, None] + torch.arange(count, device=rows.device)
            self.prefixes.index_put_((rows[:, None].expand_as(columns), columns), candidates)
        torch.add(self.lengths, count, out=self.prefix_lengths)
        self.scores.index_copy_(0, rows, scores.float())

    def run(self) -> None:
        """Process the loaded rows: a graph replay (captured on first use) or eagerly."""
        if not self.graphs:
            self._process()
            return
        if self.graph is None:
            self.graph = self._capture()
        self.graph.replay()

    def __call__(self, rows: torch.Tensor, candidates: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.load(rows, candidates, scores)
        self.run()
        return self.scores.index_select(0, rows).to(scores.dtype)

    def _capture(self) -> torch.cuda.CUDAGraph:
        # Warm-up on a side stream, as capture requires; the processors write only into the fixed scores, which
        # are loaded again before the replay that follows.
        device = self.scores.device
        loaded = self.scores.clone()
        stream = torch.cuda.Stream(device=device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            for _ in range(2):
                self._process()
                self.scores.copy_(loaded)
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._process()
        return graph
