"""``run.py eval-voting``: labelled clips through the voters, simulated or rendered."""
