"""The self-checks' tests, one file per module of ``companion/checks``; the answers they
share are in ``answers.py``."""
