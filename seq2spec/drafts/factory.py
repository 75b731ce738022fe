"""Choosing and building each batch's proposer from what the pair was given as a draft."""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from seq2spec.decoding.families import Family
from seq2spec.decoding.fast.checked import StateCache, model_state
from seq2spec.decoding.fast.step import DecoderStep
from seq2spec.decoding.proposal import DecodingBatch, Proposal, Proposer, ScoreProcessor, check_proposal
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts.copy_then_draft import CopyThenDraftProposer
from seq2spec.drafts.draft_model import DraftModelProposer
from seq2spec.drafts.gate import DraftGate
from seq2spec.drafts.graphed_whisper import GraphedWhisperDraft, StaticDraftRunner
from seq2spec.drafts.input_copy import InputCopyProposer, SourceRewrite
from seq2spec.drafts.lean_t5 import LEAN_FAMILIES, LeanT5Decoder
from seq2spec.drafts.lean_t5_encoder import LeanT5Encoder, has_hooks
from seq2spec.drafts.lean_whisper import LeanWhisperDraft, is_whisper_draft, transcribed_languages
from seq2spec.drafts.mel_bins import rebin_log_mel
from seq2spec.drafts.no_draft import NoDraft
from seq2spec.drafts.schedule import LengthSchedule
from seq2spec.drafts.shared_cross import big_cross_states, shared_cross_layers
from seq2spec.drafts.vocabulary_map import DraftPromptProposer, MappedRunner, VocabularyMap
from seq2spec.drafts.width import RoundCost, WidthChooser
from seq2spec.int8 import int8_available
from seq2spec.options import SpeculationOptions, SpeculationStats

LeanParts = tuple[DecoderStep | None, LeanT5Encoder | None]


class CheckedProposer:
    """A user's proposer, its proposals checked before the loop uses them."""

    def __init__(self, proposer: Proposer) -> None:
        self.proposer = proposer
        self.rows = 0

    def start(self, batch: DecodingBatch) -> None:
        self.rows = batch.rows
        self.proposer.start(batch)

    def propose(self, max_tokens: int, process: ScoreProcessor) -> Proposal:
        return check_proposal(self.proposer.propose(max_tokens, process), self.rows, max_tokens)

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        self.proposer.accept(accepted, bonus)

    def select(self, rows: list[int]) -> None:
        self.rows = len(rows)
        self.proposer.select(rows)


class ProposerFactory:
    """Per batch: no draft, input copy, a draft model, copy-then-draft, or a user's proposer object.

    ``draft`` is a draft model (with its ``family``; ``shares_encoder`` when it reads the big model's encoder
    output), ``copy`` proposes from each row's source (with ``draft``: copy where it aligns, the draft elsewhere),
    ``proposer`` is a user's own ``Proposer``, reused across batches (``start`` is called for each).
    ``copy_rewrite`` (set by the speculator for ``spellcheck_copy``) rewrites the sources a copy proposes from.
    ``vocabulary`` maps a draft of another vocabulary onto the big model's (``vocabulary_map.py``).
    """

    def __init__(
        self,
        options: SpeculationOptions,
        *,
        draft: PreTrainedModel | None = None,
        family: Family | None = None,
        shares_encoder: bool = False,
        copy: bool = False,
        proposer: Proposer | None = None,
        big: PreTrainedModel | None = None,
        vocabulary: VocabularyMap | None = None,
    ) -> None:
        if draft is not None and family is None:
            raise ValueError("a draft model needs its family")
        self.options = options
        self.draft, self.family, self.shares_encoder = draft, family, shares_encoder
        self.big = big
        self.vocabulary = vocabulary
        self.copy = copy
        self.proposer = CheckedProposer(proposer) if proposer is not None else None
        self.copy_rewrite: SourceRewrite | None = None
        self._lean: StateCache[LeanParts] = StateCache()  # keyed on the draft's state
        self._graphed: StateCache[GraphedWhisperDraft | None] = StateCache()  # keyed on the lean step
        self.copy_round_cost = RoundCost()  # the copy's rounds, timed across batches (``fit_copy_width``)

    def __call__(self, batch: DecodingBatch, stats: SpeculationStats) -> Proposer:
        options = self.options
        if self.proposer is not None:
            return self.proposer
        copy_schedule = LengthSchedule(
            options.num_draft_tokens, options.min_draft_tokens, options.max_copy_tokens, "double", options.adaptive
        )
        if self.draft is None:
            if not self.copy:
                return NoDraft()
            width = WidthChooser(self.copy_round_cost) if options.fit_copy_width else None
            return InputCopyProposer(copy_schedule, self.copy_rewrite, width)
        draft_schedule = LengthSchedule(
            options.num_draft_tokens, options.min_draft_tokens, options.max_draft_tokens, "add", options.adaptive
        )
        vocabulary = self.vocabulary
        runner = self._draft_runner(batch if vocabulary is None else vocabulary.draft_batch(batch), stats)
        if vocabulary is not None:
            runner = MappedRunner(runner, vocabulary)
        if self.copy:
            proposer = CopyThenDraftProposer(runner, copy_schedule, draft_schedule, self.copy_rewrite)
        else:
            proposer = DraftModelProposer(
                runner,
                draft_schedule,
                min_confidence=options.min_draft_confidence,
                transcript_only=not options.draft_reads_prompt,
                gate=DraftGate() if options.pause_draft else None,
            )
        return proposer if vocabulary is None else DraftPromptProposer(proposer, vocabulary)

    def _draft_runner(self, batch: DecodingBatch, stats: SpeculationStats) -> DecoderRunner | StaticDraftRunner:
        draft, family = self.draft, self.family
        device, dtype = draft.device, draft.dtype
        lean, lean_encoder = self.lean_parts()
        mask = None if batch.attention_mask is None else batch.attention_mask.to(device)
        encoder_output = batch.encoder_output
        if self.shares_encoder:
            encoder_hidden_states = batch.encoder_hidden_states.to(device, dtype)
        else:
            inputs = batch.encoder_inputs.to(device)
            if inputs.is_floating_point():
                inputs = inputs.to(dtype)
            elif self.vocabulary is not None:  # source token ids, in the draft's own vocabulary
                inputs = self.vocabulary.draft_ids(inputs)
            if family.model_type == "whisper" and inputs.shape[1] != draft.config.num_mel_bins:
                inputs = rebin_log_mel(inputs, draft.config.num_mel_bins)  # large-v3's 128 bins for an 80-bin draft
            if lean_encoder is not None:
                encoder_hidden_states = lean_encoder(inputs, mask)
            else:
                name = family.encoder_input_name
                if name == "input_ids" and inputs.is_floating_point():
                    name = "inputs_embeds"  # generate handed the encoder embeddings (Pop2Piano's conditioned features)
                encoded = draft.get_encoder()(**{name: inputs}, attention_mask=mask, return_dict=True)
                encoder_hidden_states, encoder_output = encoded.last_hidden_state, encoded
            stats.draft_encoder_calls += 1
        shared = self.shared_cross_attention(batch)
        graphed = self.graphed_step(lean)
        if graphed is not None:
            return graphed.runner(encoder_hidden_states, shared)
        if isinstance(lean, LeanWhisperDraft) and lean.language_tokens:
            config = (self.big if self.big is not None else draft).generation_config
            lean = lean.for_languages(transcribed_languages(batch.prompt, batch.transcript_start, config))
        runner = DecoderRunner(
            draft,
            family,
            encoder_hidden_states,
            mask,
            lean,
            prompt_width=batch.prompt.shape[1] - batch.transcript_start,
            encoder_output=encoder_output,
        )
        for index, (key, value) in shared.items():
            runner.take_cross_attention(index, key, value)
        return runner

    def shared_cross_attention(self, batch: DecodingBatch) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        """The big model's cross-attention keys and values for each draft layer whose projections are the big
        model's (``shared_cross``), keyed by draft layer; empty when there are none or the big runner cannot give
        them."""
        if not self.shares_encoder or self.big is None or batch.big_cross_attention is None:
            return {}
        pairs = shared_cross_layers(self.big, self.draft)
        if not pairs:
            return {}
        return big_cross_states(pairs, batch.big_cross_attention, self.draft.dtype, self.draft.device)

    def graphed_step(self, lean: DecoderStep | None) -> GraphedWhisperDraft | None:
        """Fixed-size-cache runners with CUDA graphs for a lean Whisper draft step on a CUDA device, checked against
        the lean step once per lean step (a new one comes with new weights, device, dtype or mode). A draft with
        languages' tokens scores them all there (a GPU scores the added rows next to free)."""
        if not isinstance(lean, LeanWhisperDraft) or not self.static_draft_cache(lean.embedding.device):
            return None
        if lean.language_tokens:  # one fixed head for every batch: the slice and every language's tokens
            lean = lean.for_languages(lean.language_tokens)
        graphs = lean.embedding.device.type == "cuda"
        return self._graphed.get(lean, lambda: GraphedWhisperDraft.checked(lean, self.draft, graphs=graphs))

    def static_draft_cache(self, device: torch.device) -> bool:
        """Whether a Whisper draft's lean step runs over a fixed-size cache on ``device``: where CUDA graphs can
        replay it."""
        return self.options.draft_cuda_graphs and device.type == "cuda"

    def lean_step(self) -> DecoderStep | None:
        """The draft's lean decoder step, rebuilt (and re-checked against transformers) whenever the draft's
        weights, device, dtype or mode changed since the last call."""
        return self.lean_parts()[0]

    def lean_parts(self) -> LeanParts:
        """The draft's lean decoder step and (a T5/MT5 draft with its own encoder) lean encoder, each None where
        unavailable or ``lean_draft`` is off; rebuilt and re-checked whenever the draft's weights, device, dtype or
        mode changed since the last call."""
        draft = self.draft
        if not self.options.lean_draft or not (self.family.model_type in LEAN_FAMILIES or is_whisper_draft(draft)):
            return None, None
        int8 = self.options.int8_draft and int8_available(draft.device)
        hooked = not self.shares_encoder and has_hooks(draft.get_encoder())
        return self._lean.get((model_state(draft), int8, hooked), lambda: self._checked_lean_parts(int8, hooked))

    def _checked_lean_parts(self, int8: bool, hooked: bool) -> LeanParts:
        draft = self.draft
        if self.family.model_type not in LEAN_FAMILIES:
            return LeanWhisperDraft.checked(draft, int8=int8), None
        step = LeanT5Decoder.checked(draft, int8=int8)
        return step, None if self.shares_encoder or hooked else LeanT5Encoder.checked(draft)
