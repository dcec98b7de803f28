"""The websocket API's scan-target messages (docs/api.md, "Scan targets") for one connection.

``register_target`` names a target; the connection's next binary message is
then its reference photo (not a camera frame). Registration (features, disk,
index rebuild) runs in the pipelines' executor; every session sees the new
target from its next frame on.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from detectors.objects import TargetError, TargetRegistry
from detectors.objects.store import check_name
from stream.images import check_image, decode_image
from stream.session import FrameError, Message

log = logging.getLogger(__name__)

TARGET_MESSAGES = frozenset({"register_target", "list_targets", "remove_target"})


@dataclass(frozen=True, slots=True)
class _Pending:
    name: str
    replace: bool


class TargetMessages:
    """Answers the target messages of one websocket connection.

    Call :meth:`on_text` for a JSON message whose type is in
    :data:`TARGET_MESSAGES`; while :attr:`waiting` is true, pass the next
    binary message to :meth:`on_image` instead of treating it as a frame.
    Both return the message to send back, or raise :class:`FrameError`.
    """

    def __init__(self, registry: TargetRegistry | None, executor: Executor) -> None:
        self.registry = registry
        self.executor = executor
        self._pending: _Pending | None = None

    @property
    def waiting(self) -> bool:
        return self._pending is not None

    async def on_text(self, request: dict[str, Any]) -> Message | None:
        """Handle a target message: returns the reply, or ``None`` when an image must follow."""
        registry = self._registry()
        kind = request["type"]
        if kind == "list_targets":
            return {"type": "targets", "targets": [t.to_json() for t in registry.list()]}
        name = request.get("name")
        if not isinstance(name, str):
            raise FrameError("bad_field", "'name' must be a string")
        if kind == "remove_target":
            await self._run(registry.remove, name)
            return {"type": "target_removed", "name": name}
        if self._pending is not None:
            # Its photo is the next binary message; a second name would leave one unanswered.
            raise FrameError(
                "registration_pending",
                f"register_target {self._pending.name!r} is waiting for its photo: send it first",
            )
        replace = request.get("replace", False)
        if not isinstance(replace, bool):
            raise FrameError("bad_field", "'replace' must be true or false")
        try:
            check_name(name)  # refuse before the client sends a photo
        except TargetError as exc:
            raise FrameError(exc.code, str(exc)) from None
        self._pending = _Pending(name, replace)
        return None

    async def on_image(self, data: bytes) -> Message:
        """The reference photo of the pending ``register_target``."""
        pending, self._pending = self._pending, None
        assert pending is not None, "on_image without a pending register_target"
        registry = self._registry()
        check_image(data)
        image = await asyncio.get_running_loop().run_in_executor(self.executor, decode_image, data)
        info = await self._run(registry.add, pending.name, [image], pending.replace)
        return {"type": "target_registered", **info.to_json(), "targets": len(registry.list())}

    def _registry(self) -> TargetRegistry:
        if self.registry is None:
            raise FrameError("targets_disabled", "this server has no scan targets")
        return self.registry

    async def _run(self, call: Any, *args: Any) -> Any:
        try:
            return await asyncio.get_running_loop().run_in_executor(self.executor, call, *args)
        except TargetError as exc:
            raise FrameError(exc.code, str(exc)) from None
        except OSError as exc:  # the folder: permissions, a full disk
            log.exception("cannot write the targets folder")
            raise FrameError("store_failed", f"targets folder: {exc.strerror}") from None
