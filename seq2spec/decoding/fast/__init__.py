"""The checked fast paths: forwards computed outside transformers' own (a big model's exact mirror, a draft's step,
the vocabulary head in slices, attention kernels, captured logits processing), each used only where a probe shows it
equals transformers' result (``checked.py``), and the check that the generic layout gives the model's own logits
(``layout_check.py``)."""
