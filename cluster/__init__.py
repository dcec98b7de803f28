"""Many servers as one service: ``run.py cluster`` (Redis + HAProxy + servers on loopback) and
``run.py capacity`` (what a campaign peak needs); see docs/deploy.md."""
