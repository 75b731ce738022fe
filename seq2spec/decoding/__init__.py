"""The decoding core: the loop, the decoder runner, cache surgery, verification, generation plans, and the checked
fast paths (``fast/``) that stand in for transformers where a probe allows."""
