"""The operator's configuration: what a browser viewer of this dashboard may reach. Read once at start-up.

One documented place: a ``[dashboard]`` table in ``robustlab.toml`` next to ``app.py``; each key has an
environment variable that overrides it (docs/security.md lists them with their defaults):

    data_roots           ROBUSTLAB_DATA_ROOTS           folders the dashboard may open as a Local folder (a path
                                                        list, ``:``-separated in the variable); unset: none
    model_root           ROBUSTLAB_MODEL_ROOT           a folder of local checkpoints typed model specs may name
                                                        (besides the data roots); unset: none
    ui_models            ROBUSTLAB_UI_MODELS            model specs offered besides the built-ins (comma list);
                                                        entries with * ? [ are patterns a typed spec may match
    default_model        ROBUSTLAB_DEFAULT_MODEL        the model a viewer's session opens with (a built-in or one
                                                        of ui_models); unset: the dashboard's default
    allow_custom_models  ROBUSTLAB_ALLOW_CUSTOM_MODELS  free-text model specs (any backend); default off
    allow_hub            ROBUSTLAB_ALLOW_HUB            downloads from the model hub; default off (the process
                                                        runs with HF_HUB_OFFLINE=1: no connection is attempted)
    max_sweeps           ROBUSTLAB_MAX_SWEEPS           sweeps running at once on this server; default 2 (a
                                                        failure map started on the Failures page counts as one)
    failure_max_cells    ROBUSTLAB_FAILURE_MAX_CELLS    the largest failure map the Failures page runs: items ×
                                                        perturbations × severities × models; default 20000
    failure_search_budget ROBUSTLAB_FAILURE_SEARCH_BUDGET the most model evaluations a search on the Failures
                                                        page may spend; default 5000
    model_cache_mb       ROBUSTLAB_MODEL_CACHE_MB       bytes the shared models, datasets and benches may hold
                                                        (least recently used first out); default 4096
    result_cache_mb      ROBUSTLAB_RESULT_CACHE_MB      bytes the shared results (perturbed inputs, media, views)
                                                        may hold; default 512; one entry at most a quarter
    warm_up              ROBUSTLAB_WARM_UP              compute the default Retrieval view as the server starts,
                                                        before the first viewer connects (ui.warmup); default on
    runs_dir             ROBUSTLAB_RUNS                 the folder the Benchmark page writes its run folders into
                                                        (made when first needed); unset: <cache>/runs, <cache>
                                                        being ROBUSTLAB_CACHE or ~/.cache/robustlab -- a data
                                                        folder, never the dashboard's own code folder
    personal             ROBUSTLAB_PERSONAL             one person on their own machine: data roots default to
                                                        the home folder, free-text specs and the hub allowed --
                                                        honoured only while Streamlit listens on loopback

The library and the CLI read none of this: a person at a shell may read what their user can.
"""
from __future__ import annotations

import fnmatch
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

CONFIG_FILE = Path(__file__).resolve().parents[1] / "robustlab.toml"
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}
HUB_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
FAILURE_MAX_CELLS = 20_000  # failure_max_cells' default
FAILURE_SEARCH_BUDGET = 5_000  # failure_search_budget's default
log = logging.getLogger("robustlab.ui")


@dataclass(frozen=True)
class OperatorConfig:
    data_roots: tuple[Path, ...] = ()
    model_root: Path | None = None
    ui_models: tuple[str, ...] = ()
    allow_custom_models: bool = False
    allow_hub: bool = False
    max_sweeps: int = 2
    personal: bool = False
    problems: tuple[str, ...] = field(default=(), compare=False)  # what was wrong in the configuration
    default_model: str | None = None  # checked against the registered and offered models by default_model()
    warm_up: bool = True
    model_cache_mb: int = 4096
    result_cache_mb: int = 512
    runs_dir: Path | None = None  # the operator's runs folder; None: default_runs_dir()
    failure_max_cells: int = FAILURE_MAX_CELLS  # the Failures page's budget: items × perturbations × severities
    failure_search_budget: int = FAILURE_SEARCH_BUDGET  # the most model evaluations a search may spend

    @property
    def runs_root(self) -> Path:
        """Where the Benchmark page's run folders live: ``runs_dir``, else :func:`default_runs_dir`."""
        return self.runs_dir or default_runs_dir()

    @property
    def model_patterns(self) -> tuple[str, ...]:
        return tuple(m for m in self.ui_models if any(c in m for c in "*?["))

    @property
    def offered_models(self) -> tuple[str, ...]:
        return tuple(m for m in self.ui_models if m not in self.model_patterns)

    @property
    def typed_specs(self) -> bool:
        """Whether the sidebar offers a box to type a model spec."""
        return self.allow_custom_models or bool(self.model_patterns)

    def spec_allowed(self, spec: str) -> bool:
        """Whether a typed ``spec`` may be loaded (free text on, or it matches one of the operator's patterns)."""
        return self.allow_custom_models or spec in self.offered_models or \
            any(fnmatch.fnmatchcase(spec, p) for p in self.model_patterns)

    @property
    def checkpoint_roots(self) -> tuple[Path, ...]:
        return self.data_roots + ((self.model_root,) if self.model_root else ())


def _flag(raw, key: str, problems: list) -> bool:
    s = str(raw).strip().lower()
    if s in _TRUE:
        return True
    if s not in _FALSE:
        problems.append(f"{key}={raw!r} is not a yes/no value (read as off)")
    return False


def _paths(raw, key: str, problems: list) -> tuple[Path, ...]:
    items = raw.split(os.pathsep) if isinstance(raw, str) else list(raw or [])
    out = []
    for it in items:
        if not str(it).strip():
            continue
        p = Path(os.path.realpath(Path(str(it).strip()).expanduser()))
        if p.is_dir():
            out.append(p)
        else:
            problems.append(f"{key}: {it} is not a folder (left out)")
    return tuple(dict.fromkeys(out))


def default_runs_dir() -> Path:
    """``<cache>/runs``: the user's robustlab cache (``ROBUSTLAB_CACHE`` or ``~/.cache/robustlab``, as
    :func:`robustlab.engine.cache.default_cache_dir`), never the dashboard's code folder."""
    from robustlab.engine.cache import default_cache_dir

    return Path(os.path.realpath(Path(default_cache_dir()).expanduser() / "runs"))


def _runs_dir(raw, problems: list) -> Path | None:
    """The operator's runs folder (resolved; made when first needed), or None: unset, or not a folder (one line,
    which names no path: the sidebar shows the problems to every viewer)."""
    if raw is None or not str(raw).strip():
        return None
    p = Path(os.path.realpath(Path(str(raw).strip()).expanduser()))
    first = next((a for a in (p, *p.parents) if a.exists()), p)  # the folder itself, or where it would be made
    if not first.is_dir():
        problems.append("runs_dir is not a folder (using the default runs folder, <cache>/runs)")
        return None
    code = CONFIG_FILE.parent
    if p == code or code in p.parents:  # the operator's choice, honoured; said in the server log only
        log.warning("operator configuration: runs_dir %s lies inside the dashboard's code folder (a data folder "
                    "outside it is safer)", p)
    return p


def _read_file(path: Path, problems: list) -> dict:
    if not path.is_file():
        return {}
    try:
        try:
            import tomllib
        except ImportError:  # Python 3.10: the toml package Streamlit depends on
            import toml as tomllib  # type: ignore[no-redef]
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except Exception as e:  # noqa: BLE001 - a broken file: safe defaults and one line, never a crash
        problems.append(f"{path.name} could not be read ({type(e).__name__}: {' '.join(str(e).split())[:160]}); "
                        "using the safe defaults")
        return {}
    table = data.get("dashboard", {})
    if not isinstance(table, dict):
        problems.append(f"{path.name}: [dashboard] is not a table")
        return {}
    return table


def server_address() -> str | None:
    """The address Streamlit listens on (None when not under Streamlit or unset)."""
    try:
        import streamlit as st

        return st.get_option("server.address")
    except Exception:  # noqa: BLE001 - not running under Streamlit
        return None


def load_config(env: dict | None = None, path: Path | None = None, address: str | None = "unset") -> OperatorConfig:
    """The configuration from ``path`` (default robustlab.toml next to app.py) and ``env`` (default os.environ)."""
    env = os.environ if env is None else env
    problems: list[str] = []
    table = _read_file(CONFIG_FILE if path is None else path, problems)

    def get(key: str, var: str, default=None):
        return env[var] if var in env else table.get(key, default)

    known = {"data_roots", "model_root", "ui_models", "allow_custom_models", "allow_hub", "max_sweeps", "personal",
             "default_model", "warm_up", "model_cache_mb", "result_cache_mb", "runs_dir", "failure_max_cells",
             "failure_search_budget"}
    problems += [f"robustlab.toml: unknown key {k!r} in [dashboard] (ignored)" for k in table if k not in known]
    personal = _flag(get("personal", "ROBUSTLAB_PERSONAL", False), "personal", problems)
    if personal:
        addr = server_address() if address == "unset" else address
        if addr not in LOOPBACK:
            problems.append(f"personal mode ignored: Streamlit listens on {addr or 'all interfaces'}, not on "
                            "loopback (set server.address = \"127.0.0.1\")")
            personal = False
    roots_raw = get("data_roots", "ROBUSTLAB_DATA_ROOTS", None)
    roots = _paths(roots_raw, "data_roots", problems) if roots_raw is not None else \
        ((Path.home().resolve(),) if personal else ())
    mroot = get("model_root", "ROBUSTLAB_MODEL_ROOT", None)
    mroots = _paths([mroot], "model_root", problems) if mroot else ()
    models_raw = get("ui_models", "ROBUSTLAB_UI_MODELS", ())
    models = tuple(m.strip() for m in (models_raw.split(",") if isinstance(models_raw, str) else models_raw)
                   if str(m).strip())
    custom = _flag(get("allow_custom_models", "ROBUSTLAB_ALLOW_CUSTOM_MODELS", personal), "allow_custom_models",
                   problems)
    hub = _flag(get("allow_hub", "ROBUSTLAB_ALLOW_HUB", personal), "allow_hub", problems)
    raw = get("max_sweeps", "ROBUSTLAB_MAX_SWEEPS", 2)
    try:
        sweeps = int(str(raw).strip())
        if not 1 <= sweeps <= 64:
            raise ValueError
    except ValueError:
        problems.append(f"max_sweeps={raw!r} is not a whole number from 1 to 64 (using 2)")
        sweeps = 2
    default = get("default_model", "ROBUSTLAB_DEFAULT_MODEL", None)
    if default is not None and not (isinstance(default, str) and default.strip()):
        problems.append(f"default_model={default!r} is not a model spec (using the dashboard's default)")
        default = None
    warm = _flag(get("warm_up", "ROBUSTLAB_WARM_UP", True), "warm_up", problems)
    caches = {key: _megabytes(get(key, var, default), key, default, problems)
              for key, var, default in (("model_cache_mb", "ROBUSTLAB_MODEL_CACHE_MB", 4096),
                                        ("result_cache_mb", "ROBUSTLAB_RESULT_CACHE_MB", 512))}
    runs = _runs_dir(get("runs_dir", "ROBUSTLAB_RUNS", None), problems)
    limits = {key: _whole(get(key, var, default), key, default, problems)
              for key, var, default in (("failure_max_cells", "ROBUSTLAB_FAILURE_MAX_CELLS", FAILURE_MAX_CELLS),
                                        ("failure_search_budget", "ROBUSTLAB_FAILURE_SEARCH_BUDGET",
                                         FAILURE_SEARCH_BUDGET))}
    return OperatorConfig(roots, mroots[0] if mroots else None, models, custom, hub, sweeps, personal,
                          tuple(problems), default.strip() if default else None, warm, **caches, runs_dir=runs,
                          **limits)


def _whole(raw, key: str, default: int, problems: list, top: int = 10**8) -> int:
    """A whole number from 1 to ``top`` (else ``default`` and one line)."""
    try:
        v = int(str(raw).strip())
        if not 1 <= v <= top:
            raise ValueError
        return v
    except ValueError:
        problems.append(f"{key}={raw!r} is not a whole number from 1 to {top} (using {default})")
        return default


def _megabytes(raw, key: str, default: int, problems: list) -> int:
    """A cache budget in MB: a whole number from 16 to 1,048,576 (else ``default`` and one line)."""
    try:
        mb = int(str(raw).strip())
        if not 16 <= mb <= 1 << 20:
            raise ValueError
        return mb
    except ValueError:
        problems.append(f"{key}={raw!r} is not a whole number of MB from 16 to 1048576 (using {default})")
        return default


_CONFIG: OperatorConfig | None = None


def config() -> OperatorConfig:
    """The configuration in force (read and applied at the first call: once per server process)."""
    if _CONFIG is None:
        apply(load_config())
    return _CONFIG  # type: ignore[return-value]


def apply(cfg: OperatorConfig) -> OperatorConfig:
    """Put ``cfg`` in force for this process: dataset reads confined to its data roots and, unless the hub is
    allowed, the hub libraries' offline switches set (so nothing they do opens a connection)."""
    global _CONFIG
    from robustlab.io.access import set_read_roots

    set_read_roots(cfg.data_roots)
    if not cfg.allow_hub:
        for var in HUB_ENV:
            os.environ[var] = "1"
        try:  # a hub library imported before this call read the variable at import: set its constant too
            import sys

            if "huggingface_hub" in sys.modules:
                sys.modules["huggingface_hub"].constants.HF_HUB_OFFLINE = True
        except AttributeError:  # pragma: no cover
            pass
    for p in cfg.problems:
        log.warning("operator configuration: %s", p)
    _CONFIG = cfg
    return cfg


_WARNED: set = set()


def default_model(fallback: str) -> str:
    """The model a session opens with: the operator's ``default_model`` when it is a registered model or one of
    ``ui_models``, else ``fallback`` (the dashboard's default; a line in the server log, once)."""
    cfg = config()
    want = cfg.default_model
    if not want or want == fallback or want in cfg.offered_models:
        return want or fallback
    from robustlab.models import list_models  # the model registry, only when the operator named another model

    if want in {m["spec"] for m in list_models()}:
        return want
    if want not in _WARNED:
        _WARNED.add(want)
        log.warning("operator configuration: default_model %r is neither a registered model nor in ui_models "
                    "(using %s)", want, fallback)
    return fallback


def _path_like(spec: str) -> bool:
    return spec.startswith(("/", "~", ".", "\\")) or os.sep in spec.partition(":")[0] or \
        (":" not in spec and "/" in spec)


def _may_open(path: str, roots) -> bool:
    """Whether the checkpoint ``path`` resolves (symlinks included) inside ``roots`` and is there to read; False for
    a name the file system refuses to look up (too long, a loop) as for one outside or missing."""
    from robustlab.io.access import inside

    try:
        real = Path(os.path.realpath(Path(str(path)).expanduser()))
        return inside(real, roots) and real.exists() and os.access(real, os.R_OK)
    except (OSError, ValueError):
        return False


def spec_refusal(spec: str, cfg: OperatorConfig | None = None, typed: bool = True) -> str | None:
    """Why a browser viewer may not load model ``spec`` under the operator's rules (one line), or None.

    ``typed``: the viewer typed it (not one of the listed choices: the built-ins, the operator's list, the task
    pages' well-known hub models). A typed spec needs free text or a matching pattern; a local checkpoint must lie
    inside the data roots or the model root (the same line whether it is outside, missing or unreadable); a hub
    spec needs ``allow_hub`` unless the operator listed it (then it loads from the local cache only).

    Local or hub is decided from the spec's text and these rules alone (``spec_source(spec, disk=False)``), never
    from what lies on the server's disk: ``hf:app.py`` and ``hf:assetz`` get the same line whether or not a file of
    that name sits next to the server (a bare ``hf:`` name is a hub repo id to a dashboard, never a local folder),
    and a spec without a prefix is a path, checked against the roots like any other."""
    from robustlab.models.registry import spec_source

    cfg = cfg or config()
    spec = str(spec or "").strip()
    if typed and not cfg.spec_allowed(spec):
        return ("typed model specs are off on this dashboard: pick a model from the list (the operator can allow "
                "specs with ROBUSTLAB_UI_MODELS or ROBUSTLAB_ALLOW_CUSTOM_MODELS=1)")
    denied = ("it is not a checkpoint this dashboard may open (local checkpoints are read only inside the "
              "operator's data roots or model root)")
    if _path_like(spec):
        src, path = "local", spec
    else:
        try:
            src, path = spec_source(spec, disk=False)
        except ValueError as e:
            return " ".join(str(e).split())[:300]
    if src == "local" and not _may_open(str(path), cfg.checkpoint_roots):
        return denied
    if src == "hub" and not cfg.allow_hub and spec not in cfg.offered_models:
        return ("it needs a download from the model hub, and hub downloads are off on this dashboard (the operator "
                "enables them with ROBUSTLAB_ALLOW_HUB=1); no connection was attempted")
    return None


def reset_for_tests(cfg: OperatorConfig | None = None) -> None:
    """Tests: forget the configuration (the next :func:`config` reads it again) or put ``cfg`` in force."""
    global _CONFIG
    _CONFIG = None
    if cfg is not None:
        apply(cfg)


__all__ = ["OperatorConfig", "load_config", "config", "apply", "spec_refusal", "CONFIG_FILE", "server_address",
           "default_runs_dir"]
