"""A Whisper draft's lean step over a fixed-size cache, replayed as CUDA graphs on a GPU.

On a GPU a step of the shipped 2-layer draft costs the host the launch of some sixty small kernels, far more than
the device needs to run them. A CUDA graph records those launches once and replays them with one call, but only over
tensors that never move. ``StaticDraftCache`` is such a set for one batch size: each layer's self-attention keys and
values in ``capacity`` slots per row (the draft's number of learned positions), its cross-attention keys and values,
each row's next free slot, each row's prompt padding, the fed tokens and the logits.

The layout differs from ``cache.py``'s: rows are left-aligned and each has its own length. A forward writes row
``r``'s new entries at its next free slots and attends to the slots up to each new one (not the row's prompt
padding); rolling a row back only moves its next free slot, and the next forward overwrites what it rejected. A
finished row stays in the buffers (its results are dropped) until the batch ends, so the captured graphs stay valid.

The buffers of the two latest batch sizes are kept (with their graphs) for the next batches: for whisper-base's
draft in float16 about 10 MB per row (cross-attention keys and values of 1,500 frames 6.1 MB, 448 self-attention
slots 1.8 MB, float32 logits for widths 1-4 2.1 MB), freed with the speculator.

``GraphedWhisperDraft.checked`` compares this runner's logits with the lean step's own over a probe with rollbacks
and dropped rows (graphs replayed where they run) before first use; when they disagree, or capture fails, the draft
keeps the lean step's runner. A draft only proposes: the big model decides every output token either way.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from seq2spec.decoding.families import family_of
from seq2spec.decoding.fast.checked import Within, check
from seq2spec.decoding.fast.transfer import to_device
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts.lean import probe_tolerance
from seq2spec.drafts.lean_whisper import LeanWhisperDraft

logger = logging.getLogger(__name__)

MAX_GRAPHED_WIDTH = 8  # forwards of more tokens at once (long prompts) run eagerly over the same buffers
KEPT_BATCH_SIZES = 2  # batch sizes whose buffers are kept for reuse (a run's full batches and its last, smaller one)


class StaticDraftCache:
    """The fixed-address tensors of one batch size's draft steps, and the graphs captured over them."""

    def __init__(self, lean: LeanWhisperDraft, rows: int, frames: int, capacity: int) -> None:
        device, dtype = lean.embedding.device, lean.embedding.dtype
        shape = (rows, lean.heads, capacity, lean.head_dim)
        cross_shape = (rows, lean.heads, frames, lean.head_dim)
        self.rows, self.capacity = rows, capacity
        self.keys = [torch.zeros(shape, device=device, dtype=dtype) for _ in lean.layers]
        self.values = [torch.zeros(shape, device=device, dtype=dtype) for _ in lean.layers]
        self.cross_keys = [torch.zeros(cross_shape, device=device, dtype=dtype) for _ in lean.layers]
        self.cross_values = [torch.zeros(cross_shape, device=device, dtype=dtype) for _ in lean.layers]
        self.next_slot = torch.zeros(rows, dtype=torch.long, device=device)
        self.padding = torch.zeros(rows, dtype=torch.long, device=device)
        self.slots = torch.arange(capacity, device=device)
        self.tokens: dict[int, torch.Tensor] = {}
        self.logits: dict[int, torch.Tensor] = {}
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.owner: weakref.ref | None = None  # the runner using these buffers

    def in_use(self) -> bool:
        return self.owner is not None and self.owner() is not None

    def width(self, lean: LeanWhisperDraft, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The token input and logits output buffers of forwards ``width`` tokens wide."""
        if width not in self.tokens:
            device = self.next_slot.device
            self.tokens[width] = torch.zeros(self.rows, width, dtype=torch.long, device=device)
            floor = torch.finfo(lean.embedding.dtype).min
            self.logits[width] = torch.full((self.rows, width, lean.vocabulary), floor, device=device)
        return self.tokens[width], self.logits[width]


def static_step(lean: LeanWhisperDraft, buffers: StaticDraftCache, width: int) -> None:
    """One draft forward over ``buffers``: reads ``tokens[width]``, ``next_slot`` and ``padding``, writes the new keys
    and values at each row's next ``width`` slots and the logits into ``logits[width]``. Moves no slot pointer and
    allocates only temporaries, so it can be captured as a CUDA graph and replayed."""
    tokens, logits = buffers.tokens[width], buffers.logits[width]
    rows = tokens.shape[0]
    new_slots = buffers.next_slot[:, None] + buffers.slots[:width]  # [rows, width]
    slots = buffers.slots[None, None, :]
    causal = slots <= new_slots[:, :, None]
    real = (slots >= buffers.padding[:, None, None]) | (slots == new_slots[:, :, None])
    mask = (causal & real)[:, None]  # [rows, 1, width, capacity]
    write = new_slots[:, None, :, None].expand(rows, lean.heads, width, lean.head_dim)

    def attend_self(index: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        keys, values = buffers.keys[index], buffers.values[index]
        keys.scatter_(2, write, key)
        values.scatter_(2, write, value)
        return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=1.0)

    def cross_states(index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return buffers.cross_keys[index], buffers.cross_values[index]

    positions = (new_slots - buffers.padding[:, None]).clamp_(min=0)
    hidden = lean.decode(lean.embed(tokens, positions), attend_self, cross_states)
    scores = lean.head(hidden).float()
    if lean.token_ids is None:
        logits.copy_(scores)
    else:
        logits.index_copy_(-1, lean.token_ids, scores)


class StaticDraftRunner:
    """``DecoderRunner``'s interface for a draft (``forward``, ``keep``, ``select``, ``pad_prompt``) over a
    ``StaticDraftCache``; see the module docstring."""

    def __init__(
        self,
        owner: GraphedWhisperDraft,
        buffers: StaticDraftCache,
        encoder_hidden_states: torch.Tensor,
        shared_cross: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None,
    ):
        self.owner, self.lean, self.buffers = owner, owner.lean, buffers
        self.device = encoder_hidden_states.device
        rows = encoder_hidden_states.shape[0]
        self.live = list(range(rows))  # buffer row of each live batch row
        self.live_index = torch.arange(rows, device=self.device)
        self.next_slot = [0] * rows  # host copy of the buffers' next_slot
        buffers.next_slot.zero_()
        buffers.padding.zero_()
        hidden = encoder_hidden_states.to(self.lean.embedding.dtype)
        shared_cross = shared_cross or {}
        with torch.no_grad():
            for index in range(len(self.lean.layers)):
                given = shared_cross.get(index)
                key, value = given if given is not None else self.lean.cross_states(index, hidden)
                buffers.cross_keys[index].copy_(key)
                buffers.cross_values[index].copy_(value)
        buffers.owner = weakref.ref(self)

    @property
    def cache_length(self) -> int:
        return max((self.next_slot[row] for row in self.live), default=0)

    def pad_prompt(self, padding: list[int]) -> None:
        """Before the first forward: row ``r``'s first ``padding[r]`` tokens are padding (a left-padded prompt)."""
        if any(self.next_slot):
            raise RuntimeError("pad_prompt applies before the first forward only")
        self.buffers.padding.copy_(to_device(padding, self.device))

    @torch.no_grad()
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (float32, ``[rows, len, vocab]``) for ``tokens`` appended to each live row's kept entries."""
        buffers = self.buffers
        if buffers.owner is None or buffers.owner() is not self:
            raise RuntimeError("this draft cache was taken over by another batch")
        width = tokens.shape[1]
        if max(self.next_slot) + width > buffers.capacity:
            raise ValueError(f"the draft has {buffers.capacity} positions; a row would pass the last one")
        token_buffer, logits = buffers.width(self.lean, width)
        tokens = tokens.to(self.device)
        if len(self.live) == buffers.rows:
            token_buffer.copy_(tokens)
        else:
            token_buffer.index_copy_(0, self.live_index, tokens)
        self.owner.run(buffers, width)
        buffers.next_slot.add_(width)
        self.next_slot = [slot + width for slot in self.next_slot]
        return logits.index_select(0, self.live_index)

    def keep(self, kept: list[int], fed: int) -> None:
        """Of the ``fed`` tokens of the last forward(s), live row ``r`` keeps the first ``kept[r]``; the rows that
        have left start again at slot 0 (what they compute is never read)."""
        slots = [0] * self.buffers.rows
        for row, count in zip(self.live, kept, strict=True):
            slots[row] = self.next_slot[row] - fed + count
        self.next_slot = slots
        self.buffers.next_slot.copy_(to_device(slots, self.device))

    def select(self, rows: list[int]) -> None:
        """Keep only ``rows`` of the live batch."""
        self.live = [self.live[row] for row in rows]
        self.live_index = to_device(self.live, self.device)


class GraphedWhisperDraft:
    """Runners over fixed-size caches for a lean Whisper draft step; on a CUDA device (``graphs``) each forward
    width's step is captured once per batch size and replayed."""

    def __init__(self, lean: LeanWhisperDraft, capacity: int, *, graphs: bool) -> None:
        self.lean, self.capacity, self.graphs = lean, capacity, graphs
        self.eager_widths: set[int] = set()
        self.caches: OrderedDict[tuple[int, int], StaticDraftCache] = OrderedDict()

    def runner(
        self,
        encoder_hidden_states: torch.Tensor,
        shared_cross: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None,
    ) -> StaticDraftRunner:
        """A runner for one batch (``[rows, frames, width]`` encoder output), over reused buffers when they are free;
        ``shared_cross``: cross-attention keys and values of some draft layers, given (the big model's)."""
        key = tuple(encoder_hidden_states.shape[:2])
        buffers = self.caches.get(key)
        if buffers is None:
            buffers = self.caches[key] = StaticDraftCache(self.lean, *key, self.capacity)
        elif buffers.in_use():  # another batch of this size is still decoding: buffers of its own, not kept
            buffers = StaticDraftCache(self.lean, *key, self.capacity)
        self.caches.move_to_end(key)
        while len(self.caches) > KEPT_BATCH_SIZES:
            self.caches.popitem(last=False)
        return StaticDraftRunner(self, buffers, encoder_hidden_states, shared_cross)

    def run(self, buffers: StaticDraftCache, width: int) -> None:
        """One step over ``buffers``: a graph replay (captured on first use of this width) or an eager step (no
        graphs, a wide forward, or a width whose capture failed)."""
        if not self.graphs or width > MAX_GRAPHED_WIDTH or width in self.eager_widths:
            static_step(self.lean, buffers, width)
            return
        graph = buffers.graphs.get(width)
        if graph is None:
            try:
                graph = self._capture(buffers, width)
            except RuntimeError as error:  # the probe captured other widths; this one runs eagerly from now on
                logger.warning(
                    "CUDA graph capture of the draft's %d-token step failed (%s); running it eagerly", width, error
                )
                self.eager_widths.add(width)
                static_step(self.lean, buffers, width)
                return
        graph.replay()

    def _capture(self, buffers: StaticDraftCache, width: int) -> torch.cuda.CUDAGraph:
        # Warm-up steps on a side stream, as CUDA graph capture requires. They write the rows' next slots, which the
        # replay that follows overwrites before anything reads them.
        stream = torch.cuda.Stream(device=buffers.next_slot.device)
        stream.wait_stream(torch.cuda.current_stream(buffers.next_slot.device))
        with torch.cuda.stream(stream):
            for _ in range(2):
                static_step(self.lean, buffers, width)
        torch.cuda.current_stream(buffers.next_slot.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):  # its own memory pool: a shared one dies with the graphs that used it
            static_step(self.lean, buffers, width)
        buffers.graphs[width] = graph
        return graph

    @classmethod
    def checked(cls, lean: LeanWhisperDraft, model: PreTrainedModel, *, graphs: bool) -> GraphedWhisperDraft | None:
        """Fixed-size-cache runners for ``lean`` if they reproduce the lean step's logits on a probe, else None. Not
        for an int8 step: its activations are quantised per call, so the rows that have left would move the others'
        numbers."""
        if lean.int8:
            return None
        capacity = model.config.max_target_positions
        graphed = check(  # any failure, capture included, keeps the lean runner
            "fixed-size draft cache",
            lambda: cls(lean, capacity, graphs=graphs),
            lambda graphed: graphed.probe_difference(model),
            Within(probe_tolerance(lean.embedding.dtype)),
        )
        if graphed is not None:
            graphed.caches.clear()  # the probe's buffers
        return graphed

    @torch.no_grad()
    def probe_difference(self, model: PreTrainedModel) -> float:
        """Largest gap between these runners' and the lean step's log-probabilities over a three-row probe: a padded
        prompt, per-row rollbacks, a dropped row and single-token steps, relative to their scale."""
        lean = self.lean
        device, dtype = lean.embedding.device, lean.embedding.dtype
        generator = torch.Generator().manual_seed(0)
        encoded = torch.randn(3, 9, lean.embedding.shape[1], generator=generator).to(device, dtype)
        reference = DecoderRunner(model, family_of(model), encoded, None, step=lean)
        mine = self.runner(encoded)
        scored = lean.token_ids if lean.token_ids is not None else torch.arange(lean.vocabulary, device=device)
        draws = scored[torch.randint(0, scored.numel(), (3, 12), generator=generator).to(scored.device)]
        for runner in (reference, mine):
            runner.pad_prompt([0, 2, 1])
        worst = 0.0
        plan = ((0, 3, [3, 1, 2], None), (3, 5, None, None), (5, 6, [2, 0, 3], [0, 2]), (6, 8, [1, 2], None))
        plan += ((8, 9, None, None), (9, 10, None, None))
        fed = 0
        for start, stop, kept, rows in plan:
            tokens = draws[: len(mine.live), start:stop]
            expected = reference.forward(tokens)[..., scored].log_softmax(-1)
            actual = mine.forward(tokens)[..., scored].log_softmax(-1)
            worst = max(worst, float((expected - actual).abs().max()) / max(1.0, float(expected.abs().mean())))
            fed += stop - start
            if kept is not None:
                for runner in (reference, mine):
                    runner.keep(kept, fed=fed)
                fed = 0
            if rows is not None:
                for runner in (reference, mine):
                    runner.select(rows)
        return worst
