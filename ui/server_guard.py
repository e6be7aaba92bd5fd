"""What a viewer's raw websocket messages may not do (issue 44): clear what every session shares, or read the
server's git state.

Streamlit serves every browser the same ``BackMsg`` protocol. Two of its messages act beyond the sender's session:

- ``clear_cache`` (the menu's "Clear cache", or any client that sends it) clears ``st.cache_data`` and
  ``st.cache_resource`` for the whole process: every viewer's loaded models and galleries, and any limit kept there;
- ``load_git_info`` sends the repository's branch and its untracked and uncommitted file names.

:func:`install` makes the server refuse both, with a line in the server log, before Streamlit's own handler sees
them; every other message goes through unchanged. The dashboard keeps nothing shared in Streamlit's caches anyway
(``ui.cache``, ``ui.bench.SERVER_JOBS``): the guard is the second wall. Light: imports Streamlit only.
"""
from __future__ import annotations

import logging

REFUSED = frozenset({"clear_cache", "load_git_info"})
log = logging.getLogger("robustlab.ui")
_MARK = "_robustlab_guarded"


def install() -> bool:
    """Refuse :data:`REFUSED` messages in this process (idempotent). False when this Streamlit has no
    ``AppSession.handle_backmsg`` to wrap (then the log says so once)."""
    try:
        from streamlit.runtime.app_session import AppSession
    except ImportError:  # pragma: no cover - a Streamlit without the runtime module
        log.warning("server guard: streamlit.runtime.app_session is missing; clear_cache is not refused")
        return False
    handler = getattr(AppSession, "handle_backmsg", None)
    if handler is None:  # pragma: no cover
        log.warning("server guard: AppSession.handle_backmsg is missing; clear_cache is not refused")
        return False
    if getattr(handler, _MARK, False):
        return True

    def handle_backmsg(self, msg):
        try:
            kind = msg.WhichOneof("type")
        except Exception:  # noqa: BLE001 - not a BackMsg: Streamlit's own handler decides
            kind = None
        if kind in REFUSED:
            log.warning("server guard: refused a %s message from session %s (it would act on every viewer)",
                        kind, str(getattr(self, "id", "?"))[:8])
            return None
        return handler(self, msg)

    setattr(handle_backmsg, _MARK, True)
    handle_backmsg.__wrapped__ = handler  # type: ignore[attr-defined]
    AppSession.handle_backmsg = handle_backmsg
    return True
