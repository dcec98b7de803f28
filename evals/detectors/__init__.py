"""``run.py eval-model`` and ``run.py eval-targets``: the detectors on generated scenes."""
