"""What a viewer's raw websocket messages may not do (issue 44): clear what every session shares, or read the
server's git state; and what they tell: which files a person chose to upload (so the form says what did not
arrive).

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
import threading
from collections import Counter, OrderedDict

REFUSED = frozenset({"clear_cache", "load_git_info"})
log = logging.getLogger("robustlab.ui")
_MARK = "_robustlab_guarded"
MAX_SESSIONS, MAX_NAMES = 1024, 100_000  # what the upload bookkeeping may hold: bounded, whatever a client sends
_REQUESTED: OrderedDict[str, Counter] = OrderedDict()  # session id -> names asked an upload URL for, not yet seen
_REQ_LOCK = threading.Lock()


def _note_upload_request(session_id: str, names) -> None:
    """A browser asked for upload URLs for these file names (it does so for every file a person chooses, before
    uploading it): remembered until a page sees the files arrive (:func:`take_requested`, :func:`arrived`)."""
    with _REQ_LOCK:
        c = _REQUESTED.pop(session_id, None) or Counter()
        room = MAX_NAMES - sum(c.values())
        for name in list(names)[:max(room, 0)]:
            c[str(name)[:512]] += 1
        _REQUESTED[session_id] = c
        while len(_REQUESTED) > MAX_SESSIONS:
            _REQUESTED.popitem(last=False)


def take_requested(session_id: str) -> Counter:
    """The file names this session chose since the last call (and not yet seen arrive elsewhere); forgets them."""
    with _REQ_LOCK:
        return _REQUESTED.pop(session_id, None) or Counter()


def arrived(session_id: str, names) -> None:
    """Files that reached a page (an uploader outside the gallery form): no longer counted as chosen."""
    with _REQ_LOCK:
        c = _REQUESTED.get(session_id)
        if c is not None:
            c.subtract(Counter(str(n)[:512] for n in names))
            _REQUESTED[session_id] = +c


def current_session_id() -> str:
    """The browser session of the script run in progress ("" outside one)."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        return ctx.session_id if ctx is not None else ""
    except Exception:  # noqa: BLE001 - outside a Streamlit script run
        return ""


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
        if kind == "file_urls_request":  # what was chosen, so that the upload form can say what did not arrive
            try:
                _note_upload_request(str(self.id), msg.file_urls_request.file_names)
            except Exception:  # noqa: BLE001 - bookkeeping only: never in the way of the upload
                log.exception("server guard: could not note an upload request")
        return handler(self, msg)

    setattr(handle_backmsg, _MARK, True)
    handle_backmsg.__wrapped__ = handler  # type: ignore[attr-defined]
    AppSession.handle_backmsg = handle_backmsg
    return True
