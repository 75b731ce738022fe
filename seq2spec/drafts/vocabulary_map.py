"""A draft that speaks another vocabulary than the big model: its tokens matched to the big model's by their text.

Whisper large-v3 and its turbo add a language token to the vocabulary of tiny, base, small and medium (and take 128
mel bins: ``mel_bins.py``), and the English-only Whisper models use another tokenizer than the multilingual ones: a
draft of another generation proposes for the big model once each of its tokens is matched to the big model's token of
the same text. The draft then reads the big model's tokens as its own (a big token it lacks as its fallback token) and
its scores are spread over the big model's vocabulary (``-inf`` for tokens it cannot propose), so that everything
after it (logits processors, the loop, the big model's check) sees one vocabulary. The big model checks every
candidate: the output is the big model's whatever the draft proposes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from seq2spec.decoding.proposal import DecodingBatch, Proposal, Proposer, ScoreProcessor

MIN_SHARED_SHARE = 0.5  # of the draft's tokens that must have a big-model token of the same text


@dataclass(frozen=True)
class VocabularyMap:
    """Big-model token ids to the draft's and back; ``unread``: big tokens the draft's prompt leaves out (an
    English-only Whisper draft reads no language or task token)."""

    to_draft: torch.Tensor  # [big vocabulary] the draft's id of each big token (``fallback`` where it has none)
    to_big: torch.Tensor  # [draft vocabulary] the big id of each draft token, -1 where the big model has none
    fallback: int
    unread: frozenset[int] = frozenset()

    @classmethod
    def between(
        cls,
        big_tokens: Mapping[str, int],
        draft_tokens: Mapping[str, int],
        big_size: int,
        draft_size: int,
        *,
        fallback: int | None = None,
        unread: frozenset[int] = frozenset(),
    ) -> VocabularyMap:
        """The map of two vocabularies given as text -> id (``get_vocab()``) with their models' output sizes. The
        unmatched ids at the very end of both, where one side's tokenizer names none (one that leaves out Whisper's
        timestamp tokens, a model's padded rows), are matched in order. ``fallback``: the draft token read for a big
        token it lacks (else id 0)."""
        big_named = {text: index for text, index in big_tokens.items() if 0 <= index < big_size}
        draft_named = {text: index for text, index in draft_tokens.items() if 0 <= index < draft_size}
        to_big = torch.full((draft_size,), -1, dtype=torch.long)
        matched = [(index, big_named[text]) for text, index in draft_named.items() if text in big_named]
        if matched:
            draft_ids, big_ids = zip(*matched, strict=True)
            to_big[list(draft_ids)] = torch.tensor(big_ids)
        big_unnamed = set(range(big_size)) - set(big_named.values())
        draft_unnamed = set(range(draft_size)) - set(draft_named.values())
        big_matched = set(to_big.tolist())
        back = 1
        while back <= min(big_size, draft_size):
            big_id, draft_id = big_size - back, draft_size - back
            unnamed = big_id in big_unnamed or draft_id in draft_unnamed
            if not unnamed or to_big[draft_id] >= 0 or big_id in big_matched:
                break
            to_big[draft_id] = big_id
            back += 1
        fallback = int(fallback) if fallback is not None and 0 <= fallback < draft_size else 0
        to_draft = torch.full((big_size,), fallback, dtype=torch.long)
        shared = to_big >= 0
        to_draft[to_big[shared]] = torch.arange(draft_size)[shared]
        return cls(to_draft, to_big, fallback, unread)

    @property
    def shared(self) -> int:
        """How many of the draft's tokens have a big-model token."""
        return int((self.to_big >= 0).sum())

    @property
    def is_identity(self) -> bool:
        """Whether every token has the same id on both sides (and no prompt token is left unread)."""
        same = self.big_size == self.draft_size and torch.equal(self.to_big, torch.arange(self.draft_size))
        return same and not self.unread

    @property
    def big_size(self) -> int:
        return self.to_draft.shape[0]

    @property
    def draft_size(self) -> int:
        return self.to_big.shape[0]

    def draft_ids(self, big_ids: torch.Tensor) -> torch.Tensor:
        """``big_ids`` as the draft's token ids."""
        return self._on(big_ids.device)[0][big_ids]

    def big_scores(self, draft_scores: torch.Tensor) -> torch.Tensor:
        """``[..., draft vocabulary]`` scores as ``[..., big vocabulary]``: ``-inf`` for big tokens the draft lacks."""
        _, draft_columns, big_columns = self._on(draft_scores.device)
        scores = draft_scores.new_full((*draft_scores.shape[:-1], self.big_size), float("-inf"))
        scores[..., big_columns] = draft_scores[..., draft_columns]
        return scores

    def draft_batch(self, batch: DecodingBatch) -> DecodingBatch:
        """``batch`` as the draft reads it: without the transcript prompt's columns that hold ``unread`` tokens in
        every row."""
        if not self.unread:
            return batch
        unread = torch.tensor(sorted(self.unread), device=batch.prompt.device)
        skipped = torch.isin(batch.prompt, unread).all(dim=0)
        skipped[: batch.transcript_start] = False
        if not bool(skipped.any()):
            return batch
        return dataclasses.replace(batch, prompt=batch.prompt[:, ~skipped])

    def _on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``to_draft`` and the matched (draft, big) columns on ``device``, moved there once."""
        cached = self.__dict__.get("_device_tensors")
        if cached is None or cached[0].device != device:
            shared = torch.nonzero(self.to_big >= 0).squeeze(1)
            cached = (self.to_draft.to(device), shared.to(device), self.to_big[shared].to(device))
            object.__setattr__(self, "_device_tensors", cached)
        return cached


class MappedRunner:
    """A draft's decoder runner that reads and scores the big model's vocabulary (``VocabularyMap``); the rest of
    the runner (cache, rows kept and dropped) is the draft's own."""

    def __init__(self, runner: Any, vocabulary: VocabularyMap) -> None:
        self.runner = runner
        self.vocabulary = vocabulary

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = tokens.to(self.runner.device)
        return self.vocabulary.big_scores(self.runner.forward(self.vocabulary.draft_ids(tokens)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runner, name)


class DraftPromptProposer:
    """A proposer over a ``VocabularyMap``'s draft: started on the batch as that draft reads it."""

    def __init__(self, proposer: Proposer, vocabulary: VocabularyMap) -> None:
        self.proposer = proposer
        self.vocabulary = vocabulary

    def start(self, batch: DecodingBatch) -> None:
        self.proposer.start(self.vocabulary.draft_batch(batch))

    def propose(self, max_tokens: int, process: ScoreProcessor) -> Proposal:
        return self.proposer.propose(max_tokens, process)

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        self.proposer.accept(accepted, bonus)

    def select(self, rows: list[int]) -> None:
        self.proposer.select(rows)


def whisper_unread_tokens(big_generation: Any, draft_generation: Any) -> frozenset[int]:
    """The big Whisper's language and task tokens where the draft is English-only (its prompt holds neither)."""
    if not getattr(big_generation, "is_multilingual", False) or getattr(draft_generation, "is_multilingual", True):
        return frozenset()
    languages = getattr(big_generation, "lang_to_id", None) or {}
    tasks = getattr(big_generation, "task_to_id", None) or {}
    return frozenset(int(index) for index in (*languages.values(), *tasks.values()))


def vocabulary_map(
    big_tokenizer: Any, draft_tokenizer: Any, big: Any, draft: Any, sizes: tuple[int, int]
) -> VocabularyMap:
    """The map between two models' vocabularies (output sizes ``sizes``) from their tokenizers; a ``ValueError``
    when the texts of under half the draft's tokens are the big model's: such a draft is no draft for it."""
    big_size, draft_size = sizes
    fallback = getattr(draft_tokenizer, "unk_token_id", None)
    unread = frozenset()
    if big.config.model_type == "whisper" and draft.config.model_type == "whisper":
        unread = whisper_unread_tokens(big.generation_config, draft.generation_config)
    vocabulary = VocabularyMap.between(
        big_tokenizer.get_vocab(), draft_tokenizer.get_vocab(), big_size, draft_size, fallback=fallback, unread=unread
    )
    if vocabulary.shared < MIN_SHARED_SHARE * draft_size:
        raise ValueError(
            f"big and draft models have different vocabularies ({big_size} vs {draft_size} output tokens) and share "
            f"the text of only {vocabulary.shared} of the draft's tokens: not a draft for this model"
        )
    return vocabulary
