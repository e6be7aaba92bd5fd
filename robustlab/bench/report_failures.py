"""The report's "Where it breaks" section: the worst slices, the most fragile examples and the weakest adversarial
changes of a run folder that holds a failure map or a search result.

A failure map is a sweep (``robustlab failures --out DIR`` writes ``failures.json`` next to ``sweep.json`` and the
cells, read per example by :mod:`robustlab.failures`), so ``robustlab bench report DIR`` reports it like any sweep;
this section adds what the map found. It reads the map's documented JSON (``failures.json``, docs/failures.md) and
a search result (``search.json``, or a suite's ``suite.json``) as data: the failures layer sits above the sweeps and
is not imported here. What it shows:

* **the worst slices**: per perturbation (and all together), the slices the map found that are significant, by
  their significance-aware score (the lower bound of their corrected interval), each with its size, its failure
  rate against the rest's with the 95 % bootstrap interval of the difference, its mean breaking severity and
  thumbnails of its first examples;
* **the most fragile examples**: those broken by the most perturbations, then at the lowest mean severity, each
  with its clean and perturbed thumbnail at its lowest breaking severity (regenerated from its seed: the same input
  the cell saw);
* **the weakest adversarial changes** (a search result): the broken examples ranked by weakness, their change,
  the rank they fell to and the thief.

Thumbnails need the dataset (rebuilt from the map's own ``dataset`` entry); a dataset that cannot be rebuilt here
(a folder gone, a dashboard upload) leaves placeholders, never an error.

**A plain sweep** (``robustlab bench``: no ``failures.json``) gets the section too, from what its cells keep: every
example's outcome per cell (retrieval ranks, grounding IoUs, VQA answers), read per example by
:func:`robustlab.bench.report_breaks.sweep_maps` (the reading a failure map uses, at this layer), for each model and
task with a clean cell and single-perturbation cells: the breaking points per perturbation (how many examples break
at each severity, fail clean, hold; retrieval at k = 1 in the sweep's first direction) and the most fragile
examples. It cannot show slices: finding them needs the model's embeddings and the captions, which the cells do not
keep; the note says so, and ``robustlab failures --out`` on the same folder (it reuses the sweep's cells) adds them.
"""
from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Optional

import numpy as np

from robustlab.bench.report_breaks import sweep_maps
from robustlab.datasets.registry import build
from robustlab.perturb import perturb

FILE = "failures.json"
SEARCH_FILES = ("search.json", "suite.json")
SLICES_SHOWN = 6  # worst slices
FRAGILE_SHOWN = 8  # most fragile examples
CHANGES_SHOWN = 12  # weakest adversarial changes
THUMBS_PER_SLICE = 4


def _read(path: Path) -> Optional[dict]:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def load(root) -> tuple[Optional[dict], Optional[dict], list]:
    """(the failure map's JSON or None, the search result's JSON or None, warnings) of a run folder."""
    root = Path(root)
    warnings = []
    fmap = _read(root / FILE) if (root / FILE).is_file() else None
    if (root / FILE).is_file() and fmap is None:
        warnings.append(f"{FILE} is not readable JSON: the section leaves it out")
    search = None
    for name in SEARCH_FILES:
        if (root / name).is_file():
            search = _read(root / name)
            if search is None:
                warnings.append(f"{name} is not readable JSON: the section leaves it out")
            break
    return fmap, search, warnings


def _dataset(d: dict):
    if d.get("object"):  # a Dataset object the run was given: never rebuilt by its name (placeholders instead)
        return None
    try:
        kw = {k: d[k] for k in ("n", "seed") if d.get(k) is not None}
        return build(d["name"], root=d.get("root"), split=d.get("split"), **kw, **(d.get("options") or {}))
    except Exception:  # noqa: BLE001 - a dataset that cannot be rebuilt here: placeholders, never an error
        return None


def _thumb_uri(arr) -> Optional[str]:
    from robustlab.bench.cells import _thumb  # the cells' own JPEG thumbnail (PIL: imported with it)

    try:
        return "data:image/jpeg;base64," + base64.b64encode(_thumb(np.asarray(arr), height=72)).decode("ascii")
    except Exception:  # noqa: BLE001 - a visual that cannot be drawn: a placeholder
        return None


def _img(uri: Optional[str], alt: str) -> str:
    if uri is None:
        return f'<span class="missing">{html.escape(alt)}: no thumbnail</span>'
    return f'<img alt="{html.escape(alt)}" src="{uri}" style="height:72px;width:auto">'


def _pct(x) -> str:
    return f"{100 * float(x):.0f} %"


def fragility(fmap: dict) -> list[dict]:
    """One row per example (its position among the map's examples): the perturbations it breaks under (at a swept
    severity, not clean), the mean and lowest breaking severity, most fragile first."""
    rows: dict = {}
    per: dict = {}
    for it in fmap.get("items") or []:
        j = per[it["perturbation"]] = per.get(it["perturbation"], -1) + 1
        r = rows.setdefault(j, {"item": it["item"], "id": it.get("id"), "broken": [], "weakest": None})
        at = it.get("breaks_at")
        if at:
            r["broken"].append((at, it["perturbation"]))
            if r["weakest"] is None or at < r["weakest"]["breaks_at"]:
                r["weakest"] = it
    out = []
    for j, r in rows.items():
        if not r["broken"]:
            continue
        sev = [a for a, _ in r["broken"]]
        out.append({**r, "example": j, "count": len(sev), "mean": float(np.mean(sev)), "lowest": min(sev)})
    out.sort(key=lambda r: (-r["count"], r["mean"], r["example"]))
    return out


def _slices_html(fmap: dict, ds) -> str:
    slices = [s for s in fmap.get("slices") or [] if s.get("significant", True)]
    slices.sort(key=lambda s: -(s.get("score") if s.get("score") is not None else s["failure_rate"] - s["rest_rate"]))
    if not slices:
        return '<p class="none">no slice fails above the rest with confidence in this map</p>'
    cards = []
    for s in slices[:SLICES_SHOWN]:
        lo, hi = s["ci"]
        where = s.get("perturbation") or "all perturbations together"
        sev = s.get("mean_breaking_severity")
        thumbs = "".join(_img(_thumb_uri(ds.visual(int(i))) if ds is not None else None, f"item {i}")
                         for i in (s.get("examples") or [])[:THUMBS_PER_SLICE])
        cards.append(
            f'<div class="ex"><b>{html.escape(str(s.get("description")))}</b> · {html.escape(str(where))}'
            f' · {html.escape(str(s.get("kind") or "discovered"))}<br>{int(s["size"])} items fail '
            f'{_pct(s["failure_rate"])} vs {_pct(s["rest_rate"])} of the rest: difference '
            f'{100 * (s["failure_rate"] - s["rest_rate"]):+.0f} points, 95 % CI [{100 * lo:+.0f}, {100 * hi:+.0f}]'
            + (f" · mean breaking severity {float(sev):.1f}" if sev is not None else "")
            + f'<div class="thumbs">{thumbs}</div></div>')
    return '<div class="examples">' + "".join(cards) + "</div>"


def _fragile_html(fmap: dict, ds) -> str:
    rows = fragility(fmap)
    if not rows:
        return '<p class="none">no example breaks at a swept severity in this map</p>'
    n_pert = len(fmap.get("perturbations") or [])
    cards = []
    for r in rows[:FRAGILE_SHOWN]:
        w = r["weakest"]
        clean = pert = None
        if ds is not None:
            try:
                x = ds.visual(int(w["item"]))
                clean = _thumb_uri(x)
                if w.get("axis") == "visual":  # a caption's or expression's edit: the clean visual only
                    pert = _thumb_uri(perturb(x, w["perturbation"], int(w["breaks_at"]), seed=int(w["seed"])).output)
            except Exception:  # noqa: BLE001 - a perturbation that cannot run here: placeholders
                pass
        broken = ", ".join(f"{html.escape(p)} at {a}" for a, p in sorted(r["broken"]))
        cards.append(
            f'<div class="ex"><div class="thumbs">{_img(clean, "clean")}'
            + (_img(pert, f"{w['perturbation']} at {w['breaks_at']}") if w.get("axis") == "visual" else "")
            + f'</div>#{int(r["item"])} · {html.escape(str(r["id"]))}<br>breaks under {r["count"]} of {n_pert} '
            f"perturbation(s), mean severity {r['mean']:.1f}: {broken}</div>")
    return '<div class="examples">' + "".join(cards) + "</div>"


def _changes_html(search: dict) -> str:
    results = search.get("results") or search.get("examples") or []
    broken = [r for r in results if r.get("status", "broken") == "broken" and r.get("change")]
    if not broken:
        return '<p class="none">the search found no breaking change</p>'
    iou = search.get("task") == "grounding"
    rows = []
    for r in broken[:CHANGES_SHOWN]:
        change = " + ".join(f"{c['axis']} {c['perturbation']} at {c['severity']}" for c in r["change"])
        fell = (f"{float(r['clean_iou']):.3f} → {float(r['iou']):.3f}" if iou
                else f"{r.get('clean_rank')} → {r.get('rank')}")
        rows.append(f"<tr><td>{r.get('rank_in_suite') or ''}</td><td>#{int(r['item'])} · "
                    f"{html.escape(str(r.get('id')))}" + (f" · expression {r.get('ref')}" if iou else "")
                    + f"</td><td>{html.escape(change)}</td><td>{fell}</td>"
                    f"<td>{html.escape(str(r.get('thief_id') or ''))}</td></tr>")
    return ('<table class="tbl"><tr><th>#</th><th>example</th><th>weakest breaking change</th><th>'
            + ("IoU" if iou else "rank") + " clean → broken</th><th>thief</th></tr>" + "".join(rows) + "</table>")


def _what_fails(fmap: dict) -> str:
    return (f"the ground truth leaves the top {fmap.get('k')} ({fmap.get('direction')})"
            if fmap.get("metric") == "rank" else "IoU ≤ 0.5" if fmap.get("metric") == "iou" else "the answer is wrong")


def _summary_html(fmap: dict) -> str:
    """Per perturbation: examples, how many break at each swept severity, fail clean, hold."""
    sevs = [str(s) for s in fmap.get("severities") or []]
    head = ("<tr><th>perturbation</th><th>examples</th><th>break</th>" + "".join(f"<th>at {s}</th>" for s in sevs)
            + "<th>fail clean</th><th>hold</th><th>median breaking severity</th></tr>")
    rows = []
    for r in fmap.get("summary") or []:
        med = r.get("median_breaks_at")
        rows.append(f"<tr><td>{html.escape(str(r['perturbation']))}</td><td>{r['examples']}</td><td>{r['broken']}</td>"
                    + "".join(f"<td>{(r.get('by_severity') or {}).get(s, 0)}</td>" for s in sevs)
                    + f"<td>{r['clean_failures']}</td><td>{r['holding']}</td>"
                    f"<td>{'' if med is None else f'{float(med):.1f}'}</td></tr>")
    return '<table class="tbl">' + head + "".join(rows) + "</table>"


def sweep_section(run, number: int) -> Optional[dict]:
    """The section of a plain sweep (module docstring), from its cells (``run``: the report's RunData); None when
    no model and task has a clean cell and single-perturbation cells to read per example."""
    d = dict((run.sweep or {}).get("dataset") or {})
    built: dict = {}

    def dataset_of(name: str):
        if name not in built:
            built[name] = _dataset({**d, "name": name} if d.get("name") in (None, name) else {"name": name})
        return built[name]
    maps, notes = sweep_maps(run.results, dataset_of)
    if not maps:
        return None
    tables = []
    for m in maps:
        ds = built.get(m["dataset"]["name"])
        notes.append(f"{m['model']} on {m['dataset']['name']} ({m['task']}): {m['examples']} examples, an example "
                     f"fails when {_what_fails(m)}")
        what = f"{m['model']} · {m['task']}" + (f" · {m['direction']}" if m.get("direction") else "")
        tables += [(f"Breaking points per perturbation ({what}): the lowest severity at which each example fails",
                    _summary_html(m)),
                   (f"The most fragile examples ({what}; clean, then perturbed at its lowest breaking severity)",
                    _fragile_html(m, ds))]
    notes.append("read from the sweep's cells, which keep each example's outcome but not the embeddings: no slices "
                 "here (`robustlab failures --out` on this folder reuses its cells and adds them)")
    from markupsafe import Markup  # jinja2's (the report's HTML is trusted only as built here, escaped above)

    return {"title": f"{number}. Where it breaks", "note": " · ".join(notes), "figures": [],
            "tables": [(t, Markup(h)) for t, h in tables], "empty": ""}


def section(root, number: int, run=None) -> Optional[dict]:
    """The "Where it breaks" section of the run folder ``root`` (a dict for the report's template): of its failure
    map and search result, else (``run``: the report's RunData of a plain sweep) of its cells; None when there is
    nothing to show."""
    fmap, search, warnings = load(root)
    if fmap is None and search is None:
        return sweep_section(run, number) if run is not None else None
    tables, notes = [], []
    if fmap is not None:
        ds = _dataset(fmap.get("dataset") or {})
        what = _what_fails(fmap)
        notes.append(f"From {FILE}: {fmap.get('model')} on {(fmap.get('dataset') or {}).get('name')}, "
                     f"{fmap.get('examples')} examples, an example fails when {what}; severities "
                     f"{', '.join(map(str, fmap.get('severities') or []))}"
                     + (" (thumbnails: the dataset could not be rebuilt here)" if ds is None else ""))
        tables += [("The worst slices (95 % bootstrap CI of the difference in failure rate)",
                    _slices_html(fmap, ds)),
                   ("The most fragile examples (clean, then perturbed at its lowest breaking severity)",
                    _fragile_html(fmap, ds))]
    if search is not None:
        notes.append(f"From the search result: {search.get('model')}, budget {search.get('budget')} model "
                     "evaluations; weakest = the smallest largest severity, then sum of severities, then parts")
        tables.append(("The weakest adversarial changes", _changes_html(search)))
    from markupsafe import Markup  # jinja2's (the report's HTML is trusted only as built here, escaped above)

    return {"title": f"{number}. Where it breaks", "note": " · ".join(notes + warnings), "figures": [],
            "tables": [(t, Markup(h)) for t, h in tables], "empty": ""}


__all__ = ["section", "sweep_section", "load", "fragility", "FILE", "SEARCH_FILES"]
