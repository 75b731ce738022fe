"""``python -m seq2spec``: the same as the ``seq2spec`` command."""

from seq2spec.commands.main import main

if __name__ == "__main__":
    raise SystemExit(main())
