"""Where candidate tokens come from: a draft model (one of the big model's own layers, distilled, too), the source
text, both, or nothing."""

from seq2spec.drafts.copy_then_draft import CopyThenDraftProposer
from seq2spec.drafts.distill import DistillOptions, DistillStats, distill_layer_draft
from seq2spec.drafts.draft_model import DraftModelProposer
from seq2spec.drafts.factory import ProposerFactory
from seq2spec.drafts.input_copy import InputCopyProposer
from seq2spec.drafts.no_draft import NoDraft
from seq2spec.drafts.own_layers import layer_draft, load_layer_draft, save_layer_draft
from seq2spec.drafts.schedule import LengthSchedule

__all__ = [
    "CopyThenDraftProposer",
    "DistillOptions",
    "DistillStats",
    "DraftModelProposer",
    "InputCopyProposer",
    "LengthSchedule",
    "NoDraft",
    "ProposerFactory",
    "distill_layer_draft",
    "layer_draft",
    "load_layer_draft",
    "save_layer_draft",
]
