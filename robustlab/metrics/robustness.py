"""Robustness scores: γᵃ / γʳ (Schiappa et al., NeurIPS 2022 D&B) and MMI (Qiu et al., NeurIPS 2022).

With ``c`` the clean score and ``p`` the perturbed score of the same model and pipeline (digest
seeds_perturbations.md §3.2–3.3), on a scale where the best possible score is ``scale`` (1 for fractions such as
R@K in [0, 1]; 100 for percentages; 600 for RSUM):

    γᵃ  = 1 − (c − p) / scale        absolute robustness (P1 divides by 100 with scores in %)
    γʳ  = 1 − (c − p) / c  (= p / c)  relative robustness
    MMI = (c − p) / c      (= 1 − γʳ) MultiModal Impact, "↓x%" in P2's tables (lower = more robust)

Nothing is clipped: γ > 1 (and MMI < 0) means the perturbation *helped*, which the papers report as such.

Aggregation (:func:`robustness_table`), exactly as the digests specify:

* per perturbation: the mean over its severities (P1: "averaging all severity levels"; P2: s̄_p). γ and MMI are
  affine in p for a fixed c, so the mean of the per-severity scores equals the score of the severity-mean; the
  table computes the latter.
* per category (P1 Tables 2–3): mean ± SD over the perturbations of the category.
* overall: mean ± SD over perturbations (P1 "γ ± σ"); P2's MMI = (c − ave)/c with ave = the unweighted mean of s̄_p
  over perturbations (checked against P2 Table 1: CLIP ZS Flickr30K-IP, ave 499.2 → ↓6.5%).
* σ: **population** SD (ddof = 0) over the per-perturbation means — the papers do not say which; ``ddof=1`` gives the
  sample SD.
"""
from __future__ import annotations

import sys
import types
from typing import Mapping

import numpy as np


def _as_values(x, name: str):
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or an array of numbers, got {type(x).__name__}") from None
    if a.size and not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


def _check_scale(a: np.ndarray, name: str, scale: float) -> None:
    if a.size and a.min() < 0:
        raise ValueError(f"{name} must be ≥ 0 (a score such as R@K), got {a.min():g}")
    if a.size and a.max() > scale * (1 + 1e-9):
        hint = "; scores in percent need scale=100" if scale == 1 and a.max() <= 100 else ""
        raise ValueError(f"{name} = {a.max():g} is above the scale's maximum {scale:g}{hint}")


def _out(a: np.ndarray):
    return float(a) if a.ndim == 0 else a


def robustness(clean, perturbed, scale: float = 1.0) -> dict:
    """``{"gamma_a", "gamma_r", "mmi"}`` for a clean and a perturbed score (scalars, or arrays that broadcast —
    e.g. one clean score against a severity sweep). Scores are in [0, ``scale``] (default 1: fractions)."""
    if not np.isscalar(scale) or not scale > 0:
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    c = _as_values(clean, "clean score")
    p = _as_values(perturbed, "perturbed score")
    _check_scale(c, "clean score", scale)
    _check_scale(p, "perturbed score", scale)
    if c.size and (c <= 0).any():
        raise ValueError("the clean score is 0: relative robustness and MMI are undefined")
    try:
        drop = c - p
    except ValueError:
        raise ValueError(f"clean {c.shape} and perturbed {p.shape} scores do not broadcast") from None
    return {"gamma_a": _out(1.0 - drop / scale), "gamma_r": _out(1.0 - drop / c), "mmi": _out(drop / c)}


def mmi(acc_orig, acc_adv):
    """MultiModal Impact (PEELING, Qiu et al.): ``(acc_orig − acc_adv) / acc_orig``, the relative drop — e.g.
    ``mmi(89.3, 68.0) = 0.2385``. Works in any unit (fractions or percent: it is a ratio) and on arrays; a clean
    accuracy of 0 is an error (the drop is undefined)."""
    c = _as_values(acc_orig, "original accuracy")
    p = _as_values(acc_adv, "perturbed accuracy")
    if c.size and (c <= 0).any():
        raise ValueError("the original accuracy is 0: MMI is undefined")
    if (c.size and c.min() < 0) or (p.size and p.min() < 0):
        raise ValueError("accuracies must be ≥ 0")
    try:
        return _out((c - p) / c)
    except ValueError:
        raise ValueError(f"original {c.shape} and perturbed {p.shape} accuracies do not broadcast") from None


def _categories(categories, names) -> dict:
    """perturbation -> category from either {perturbation: category} or {category: [perturbations]}."""
    if categories is None:
        return {}
    if not isinstance(categories, Mapping):
        raise ValueError("categories must be a dict {perturbation: category} or {category: [perturbations]}")
    if categories and all(isinstance(v, (list, tuple, set, frozenset)) for v in categories.values()):
        out = {}
        for cat, members in categories.items():
            for m in members:
                if m in out and out[m] != cat:
                    raise ValueError(f"perturbation {m!r} is in two categories ({out[m]!r}, {cat!r})")
                out[m] = cat
        return out
    return {str(k): str(v) for k, v in categories.items()}


def _parse_sweep(sweep) -> tuple[dict, list]:
    """{(perturbation, severity): value} (or {perturbation: value} for single-level perturbations) ->
    ({perturbation: {severity: value}}, clean values found at severity 0)."""
    if not isinstance(sweep, Mapping) or not sweep:
        raise ValueError("the sweep must be a non-empty dict {(perturbation, severity): score}")
    by_p: dict = {}
    clean_found = []
    for key, value in sweep.items():
        if isinstance(key, tuple):
            if len(key) != 2:
                raise ValueError(f"sweep key {key!r} is not (perturbation, severity)")
            name, sev = key
        else:
            name, sev = key, None
        v = float(_as_values(value, f"score of {key!r}"))
        if sev is not None:
            try:
                sev = int(sev)
            except (TypeError, ValueError):
                raise ValueError(f"severity in {key!r} is not an integer") from None
            if sev < 0:
                raise ValueError(f"severity in {key!r} is negative")
            if sev == 0:
                clean_found.append(v)
                continue
        by_p.setdefault(str(name), {})[sev] = v
    return by_p, clean_found


def _mean_sd(values, ddof):
    a = np.asarray(values, dtype=np.float64)
    sd = float(a.std(ddof=ddof)) if a.size > ddof else float("nan")
    return float(a.mean()), sd


def robustness_table(sweep, clean=None, categories=None, scale: float = 1.0, ddof: int = 0) -> dict:
    """Paper-style table from a severity sweep ``{(perturbation, severity): score}``.

    ``clean``: the clean score; if omitted, the sweep's severity-0 entries are used (they must agree).
    ``categories``: {perturbation: category} or {category: [perturbations]}; unlisted perturbations go to
    "other". Returns ``{"clean", "scale", "perturbations": [...], "categories": [...], "overall": {...}}``; each
    perturbation row has its severities, ``mean`` (s̄_p), ``gamma_a``, ``gamma_r``, ``mmi``; category and overall
    rows have the means and ``*_std`` over their perturbations, and ``mmi`` = (c − ave)/c with ``ave`` the mean
    of s̄_p (identical to the mean of the per-perturbation MMIs).
    """
    by_p, clean_found = _parse_sweep(sweep)
    if clean is None:
        if not clean_found:
            raise ValueError("no clean score: pass clean=... or include (perturbation, 0) entries in the sweep")
        if max(clean_found) - min(clean_found) > 1e-9:
            raise ValueError(f"the severity-0 (clean) entries disagree: {sorted(set(clean_found))}")
        clean = clean_found[0]
    c = float(_as_values(clean, "clean score"))
    if not by_p:
        raise ValueError("the sweep has no perturbed entries (severity ≥ 1)")
    cat_of = _categories(categories, by_p)
    rows = []
    for name in by_p:
        sevs = by_p[name]
        mean = float(np.mean(list(sevs.values())))
        r = robustness(c, mean, scale=scale)
        rows.append({"perturbation": name, "category": cat_of.get(name, "other"),
                     "severities": {("single" if s is None else s): v for s, v in sorted(
                         sevs.items(), key=lambda kv: -1 if kv[0] is None else kv[0])},
                     "mean": mean, **r})

    def group(members: list[dict]) -> dict:
        out = {"n": len(members)}
        for key in ("gamma_a", "gamma_r", "mmi"):
            out[key], out[f"{key}_std"] = _mean_sd([m[key] for m in members], ddof)
        out["ave"] = float(np.mean([m["mean"] for m in members]))
        return out

    cats = []
    for cat in dict.fromkeys(r["category"] for r in rows):
        members = [r for r in rows if r["category"] == cat]
        cats.append({"category": cat, "perturbations": [m["perturbation"] for m in members], **group(members)})
    return {"clean": c, "scale": float(scale), "ddof": int(ddof), "perturbations": rows, "categories": cats,
            "overall": group(rows)}


def table_rows(table: dict) -> list[dict]:
    """Flat rows (one per perturbation, then one per category, then "all") for a DataFrame or CSV."""
    out = []
    for r in table["perturbations"]:
        row = {"level": "perturbation", "name": r["perturbation"], "category": r["category"], "score": r["mean"],
               "gamma_a": r["gamma_a"], "gamma_r": r["gamma_r"], "mmi": r["mmi"]}
        row.update({f"s{s}": v for s, v in r["severities"].items()})
        out.append(row)
    for g in table["categories"] + [dict(table["overall"], category="all")]:
        out.append({"level": "category" if g["category"] != "all" else "overall", "name": g["category"],
                    "category": g["category"], "score": g["ave"],
                    **{k: g[k] for k in ("gamma_a", "gamma_a_std", "gamma_r", "gamma_r_std", "mmi", "mmi_std")},
                    "n": g["n"]})
    return out


class _CallableModule(types.ModuleType):
    """Calling this module calls :func:`robustness`: its package exposes the module under that name, so that both
    ``rl.metrics.robustness(clean, perturbed)`` and ``import robustlab.metrics.robustness as R`` work (issue 46)."""

    def __call__(self, *args, **kwargs):
        return robustness(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
