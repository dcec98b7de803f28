"""What a scan feels like per device profile: ``run.py profiles`` and ``run.py eval-hw``."""
