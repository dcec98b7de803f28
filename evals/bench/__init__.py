"""``run.py bench``: where every millisecond goes, one module per section."""
