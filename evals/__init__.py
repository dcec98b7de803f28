"""Evaluations and benchmarks: the ``run.py`` commands that measure the service.

On top of the runtime packages (``stream``, ``voting``, ``hw_sim``,
``detectors``), which never import it.
"""
