"""What admission needs of a store that counts sessions per client over several servers.

``serve --redis`` provides one (:class:`stream.redis_state.RedisLeases`); without it each
server counts its own sessions only (:class:`stream.admission.Admission`).
"""

from __future__ import annotations

from typing import Protocol


class Lease(Protocol):
    """One session's slot among its client's, held until :meth:`release` (idempotent)."""

    def release(self) -> None: ...


class ClientLeases(Protocol):
    async def acquire(self, client: str, limit: int) -> Lease | None:
        """A lease, or ``None`` when ``client`` already holds ``limit`` sessions in all."""
        ...
