"""Where candidate tokens come from: a draft model, the source text, both, or nothing."""

from seq2spec.drafts.copy_then_draft import CopyThenDraftProposer
from seq2spec.drafts.draft_model import DraftModelProposer
from seq2spec.drafts.factory import ProposerFactory
from seq2spec.drafts.input_copy import InputCopyProposer
from seq2spec.drafts.no_draft import NoDraft
from seq2spec.drafts.schedule import LengthSchedule

__all__ = [
    "CopyThenDraftProposer",
    "DraftModelProposer",
    "InputCopyProposer",
    "LengthSchedule",
    "NoDraft",
    "ProposerFactory",
]
