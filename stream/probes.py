"""``GET /healthz`` (the process serves) and ``GET /readyz`` (it takes sessions now) for
balancers and Kubernetes probes; neither needs the token."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from stream.admission import SHUTTING_DOWN, Admission


def add_probes(
    app: web.Application, admission: Admission, shutting_down: Callable[[], bool]
) -> None:
    """``/readyz`` answers 503 while ``shutting_down()`` or every session slot is taken."""

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"alive": True})

    async def readyz(_: web.Request) -> web.Response:
        reason = None
        if shutting_down():
            reason = SHUTTING_DOWN
        elif admission.total >= admission.max_total:
            reason = f"server full ({admission.max_total} sessions)"
        body: dict[str, object] = {
            "ready": reason is None,
            "sessions": admission.total,
            "max_sessions": admission.max_total,
        }
        if reason is not None:
            body["reason"] = reason
        return web.json_response(body, status=200 if reason is None else 503)

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
