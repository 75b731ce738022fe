"""The seq2spec command line: one module per command, shared flags in flags.py."""
