"""The decoding core: the loop, the decoder runner, cache surgery, verification and generation plans."""
