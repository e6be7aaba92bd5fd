"""The results of a run (errors, content checks, model loads, memory against the bounds) and their summary."""
from __future__ import annotations

import os
import platform
import re
import time

from .common import MODEL_LOAD
from .server import _r, _status_meminfo
from .session import Session


def _window_mean(samples, lo: float, hi: float) -> float | None:
    xs = [m for t, m, *_ in samples if lo <= t <= hi]
    return sum(xs) / len(xs) if xs else None


def _fifths(samples, lo: float, hi: float) -> tuple[float | None, dict]:
    """Growth over [lo, hi]: mean RSS over its last fifth minus its first; the two windows as [from, to, mean]."""
    span = hi - lo
    first = _window_mean(samples, lo, lo + 0.2 * span)
    last = _window_mean(samples, hi - 0.2 * span, hi)
    if first is None or last is None:
        return None, {}
    return last - first, {"first": [round(lo, 1), round(lo + 0.2 * span, 1), round(first, 1)],
                          "last": [round(hi - 0.2 * span, 1), round(hi, 1), round(last, 1)]}


def results(sessions: int, seconds: float, sess: list, shared, sampler, server, text: str, t0: float, t_end: float,
            info: dict, load_start, load_end, peak_bound_mb: float, growth_bound_mb: float) -> dict:
    """The results of a run (see the module docstring of benchmarks/bench_concurrency.py): errors (the sessions',
    then every Traceback in the server's log ``text``), model loads, distinctness, memory and the bounds."""

    # errors: the sessions', then every Traceback in the server's log
    errors = [e for s in sess for e in s.stats.errors]
    tb = [m.start() for m in re.finditer(r"Traceback \(most recent call last\)", text)]
    for pos in tb[:5]:
        errors.append({"session": None, "page": None, "kind": "server traceback", "detail": text[pos:pos + 2000]})
    if len(tb) > 5:
        errors.append({"session": None, "page": None, "kind": "server traceback", "detail": f"{len(tb) - 5} more"})
    loads: dict[str, int] = {}
    for spec, device in MODEL_LOAD.findall(text):
        loads[f"{spec} on {device}"] = loads.get(f"{spec} on {device}", 0) + 1

    # distinctness: two sessions on one page with other choices must not have seen the same results
    distinct = []
    by_page: dict[str, list[Session]] = {}
    for s in sess:
        by_page.setdefault(s.sc.title, []).append(s)
    for title, group in by_page.items():
        for a in range(len(group)):
            for b in range(a + 1, len(group)):
                sa, sb = set(group[a].stats.seen.values()), set(group[b].stats.seen.values())
                if sa and sb:
                    ok = sa != sb  # other choices, so not all the same results
                    distinct.append({"page": title, "sessions": [group[a].idx, group[b].idx], "ok": ok,
                                     "shared_results": len(sa & sb)})
                    if not ok:
                        errors.append({"session": group[b].idx, "page": title, "kind": "content",
                                       "detail": f"sessions {group[a].idx} and {group[b].idx} chose differently "
                                                 f"but saw the same {len(sa)} result(s)"})

    # memory
    smp = sampler.samples
    server_mb = [m for _, m, _, _ in smp]
    chrome_mb = [c for _, _, c, _ in smp]
    pss = [p for *_, p in smp if p is not None]
    # warm-up ends when every session has done each of its choices once and switched page; a session too slow to
    # get there (a page whose every step is long, on a loaded machine) is named and left out when at least 3/4 did
    warm = [s.stats.warm_at - t0 for s in sess if s.stats.warm_at is not None]
    not_warmed = [s.idx for s in sess if s.stats.warm_at is None]
    warm_rule = None
    warm_t = None
    if warm and not not_warmed:
        warm_t, warm_rule = max(warm), "every session"
    elif warm and len(warm) >= 0.75 * len(sess):
        warm_t, warm_rule = max(warm), f"every session but {not_warmed} (too few steps to warm up)"
    growth = None
    windows = None
    if warm_t is not None and t_end - warm_t < 0.3 * t_end:
        warm_rule = f"{warm_rule}: too late ({warm_t:.0f} of {t_end:.0f} s) to measure growth"
    if warm_t is not None and t_end - warm_t >= 0.3 * t_end:
        growth, w = _fifths(smp, warm_t, t_end)
        windows = {"after_warmup": w["first"], "last": w["last"]} if w else None
    growth_rule = None if growth is None else "after warm-up"
    soak = None
    if shared.soak_start is not None:  # the soak phase: every session switching pages, nothing new computed
        lo, hi = shared.soak_start - t0, min(shared.soak_end - t0, t_end)
        g, w = _fifths(smp, lo, hi)
        soak = {"from_s": round(lo, 1), "to_s": round(hi, 1),
                "page_switches": sum(s_.stats.soak_switches for s_ in sess),
                "first_fifth_mb": w["first"][2] if w else None, "last_fifth_mb": w["last"][2] if w else None,
                "growth_mb": _r(g)}
        if g is not None:
            growth, growth_rule = g, "soak phase (every session switching pages, after the run)"
            windows = {"soak_first": w["first"], "soak_last": w["last"]}
    peak = max(server_mb) if server_mb else None
    after_warm = next((m for t, m, *_ in smp if warm_t is not None and t >= warm_t), None)
    checks = sum(s.stats.checks for s in sess)
    passed = sum(s.stats.passed for s in sess) + sum(d["ok"] for d in distinct)
    checks += len(distinct)
    within = {"server_peak": peak is not None and peak <= peak_bound_mb,
              "growth": None if growth is None else growth <= growth_bound_mb}  # None: not measured
    try:
        import importlib.metadata as md

        versions = {p: md.version(p) for p in ("streamlit", "playwright", "torch")}
    except Exception:  # noqa: BLE001 - versions are informative only
        versions = {}
    mem_total = _status_meminfo()
    res = {
        "issue": 15,
        "what": "one streamlit server, N concurrent headless-Chromium sessions (one browser context each), each on its "
                "own page with its own choices; content checks, ledger, soak of page switches",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "sessions": sessions,
        "minutes": round(seconds / 60, 2),
        "duration_s": round(t_end, 1),
        "plan": [{"session": s.idx, **s.sc.describe(), "switch_every_steps": s.sc.switch_every,
                  "soak_pages": s.soak_pages()} for s in sess],
        "per_session": [{"session": s.idx, "page": s.sc.title, "steps": s.stats.steps, "actions": s.stats.actions,
                         "page_switches": s.stats.switches, "checks": s.stats.checks, "passed": s.stats.passed,
                         "errors": len(s.stats.errors), "steps_done_at_s": s.stats.step_at,
                         "timeline": s.stats.timeline, "soak_switches": s.stats.soak_switches,
                         "warm_at_s": None if s.stats.warm_at is None else round(s.stats.warm_at - t0, 1)}
                        for s in sess],
        "actions_total": sum(s.stats.actions for s in sess),
        "errors": {"count": len(errors), "details": errors},
        "content_checks": {"done": checks, "passed": passed, "ledger_keys": len(shared.ledger),
                           "distinct_pairs": distinct},
        "model_loads": loads,
        "server_tracebacks": len(tb),
        "memory_mb": {
            "server_rss_peak": _r(peak), "server_rss_after_warmup": _r(after_warm),
            "server_rss_end": _r(server_mb[-1] if server_mb else None), "warmup_s": _r(warm_t),
            "warmup_rule": warm_rule,
            "sessions_not_warmed": not_warmed,
            "growth": _r(growth), "growth_rule": growth_rule, "growth_windows": windows, "soak": soak,
            "growth_definition": "mean server RSS over the last 20% of a stretch minus the mean over its first 20%; "
                                 "the stretch is the soak phase when there is one (after the run, every session "
                                 "switching to other pages and back, from when the last session entered it), else "
                                 "the run after warm-up (every session has done each of its choices once and switched "
                                 "page at least once)",
            "chromium_rss_peak": _r(max(chrome_mb) if chrome_mb else None),
            "chromium_rss_end": _r(chrome_mb[-1] if chrome_mb else None),
            "chromium_pss_peak": _r(max(pss) if pss else None),
            "chromium_note": "sum over Chromium's processes (RSS counts shared pages once per process; PSS does not)",
            "series_10s": [[round(t), round(m), round(c)] for t, m, c, _ in smp[::10]],
        },
        "bounds": {"server_rss_peak_mb": peak_bound_mb, "growth_mb": growth_bound_mb, "within": within},
        "machine": {"cpus": os.cpu_count(), "mem_total_gb": mem_total, "platform": platform.platform(),
                    "python": platform.python_version(), **versions, **info,
                    "loadavg_start": [round(x, 2) for x in load_start], "loadavg_end": [round(x, 2) for x in load_end],
                    "loadavg_1min_mean_during": _r(sum(x for _, x in sampler.loads) / len(sampler.loads)
                                                   if sampler.loads else None)},
        "server_log": str(server.log_path),
    }
    res["ok"] = not errors and all(v is not False for v in within.values())  # growth may be unmeasured (short run)
    return res


def summary(res: dict) -> str:
    m = res["memory_mb"]
    c = res["content_checks"]
    lines = [
        f"{res['sessions']} sessions × {res['duration_s']:.0f} s on one server "
        f"(load avg {res['machine']['loadavg_start'][0]} → {res['machine']['loadavg_end'][0]})",
        f"errors: {res['errors']['count']} · content checks {c['passed']}/{c['done']} passed · ledger keys "
        f"{c['ledger_keys']} · server tracebacks {res['server_tracebacks']}",
        f"model loads: {res['model_loads']}",
        f"server RSS peak {m['server_rss_peak']} MB (bound {res['bounds']['server_rss_peak_mb']}) · after warm-up "
        f"{m['server_rss_after_warmup']} MB (warm-up {m['warmup_s']} s) · end {m['server_rss_end']} MB · growth "
        + (f"{m['growth']} MB over the {m.get('growth_rule')} (bound {res['bounds']['growth_mb']})"
           if m['growth'] is not None
         else f"not measured ({m.get('warmup_rule') or 'not every session warmed up'})"),
        f"chromium RSS peak {m['chromium_rss_peak']} MB (PSS {m['chromium_pss_peak']} MB)",
        "per session (page: steps/actions/switches/checks passed/errors): " + "; ".join(
            f"{p['session']} {p['page']}: {p['steps']}/{p['actions']}/{p['page_switches']}/{p['passed']}/{p['errors']}"
            for p in res["per_session"]),
    ]
    for j, e in enumerate(res["errors"]["details"][:10]):  # the first ones whole: CI's log is all a failure leaves
        lines.append(f"  ERROR s{e.get('session')} {e.get('page')} {e['kind']}: {e['detail'][:1500 if j < 3 else 300]}")
    lines.append("OK" if res["ok"] else "FAILED")
    return "\n".join(lines)
