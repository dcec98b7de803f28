"""Evaluation and benchmark harnesses: commands that measure, never imported by the server."""
