"""A basket of perturbed examples kept for export (UI-free: the dashboard keeps one in session state).

An :class:`Example` holds everything needed to export and later regenerate one perturbed input: the clean
input exactly as the perturbation saw it, the output, the perturbation record, where the clean input came
from (a built-in world item or an uploaded / local file with its content hash) and, when the example was
picked from a model view, the model id and its scores.

    >>> b = Basket()
    >>> res = perturb(img, "gaussian_noise", 3, seed=0)
    >>> b.add(make_example("image", img, res, builtin_source("gallery", seed=7, index=3)))
    >>> zip_bytes = robustlab.export.build_zip(b)
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from robustlab.diagnostics.peeling import P2_STAGES
from robustlab.io.convert import to_uint8_rgb
from robustlab.io.uploads import KINDS, LoadedInput, load_upload, sha256, upload_source  # noqa: F401 - re-exported
from robustlab.perturb.record import SCHEMA, hash_value, jsonable, versions
from robustlab.perturb.record import is_no_op  # noqa: F401 - re-exported: the basket's callers ask it

PEELING_P2 = "peeling_p2"  # the record name of a PEELING test's P2 part (robustlab.diagnostics.peeling.p2_chain)
_counter = itertools.count(1)


@dataclasses.dataclass
class Example:
    kind: str  # "image" (H×W×3 uint8) | "video" (T×H×W×3 uint8) | "text" (str)
    clean: Any  # the clean input, as the perturbation saw it (after conversion)
    output: Any  # the perturbed output
    record: dict  # the perturbation record (robustlab.perturb.record)
    source: dict  # builtin_source(...) / upload_source(...) / file_source(...)
    label: str = ""  # a short human-readable name for file names and lists
    fps: float | None = None  # videos only
    model: dict | None = None  # {"id": model spec, "scores": {...}, "view": "retrieval", ...} or None
    id: str = dataclasses.field(default_factory=lambda: f"ex{next(_counter):05d}")
    added: str = dataclasses.field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    # what an export needs besides clean/output, e.g. {"image": H×W×3 uint8} for a PEELING test (its OFA tsv row)
    attachments: dict | None = None
    # the other perturbed parts of one combined condition (the Grounding page's image + expression): Examples of
    # their own (clean, output, record, source) that the model's scores were computed with together with this one;
    # exported and regenerated with it, as one example (manifest ``parts``)
    parts: list | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.parts:
            self.parts = list(self.parts)
            if not all(isinstance(p, Example) and not p.parts for p in self.parts):
                raise TypeError("an example's parts are Examples without parts of their own")
        else:
            self.parts = None
        if self.attachments is not None:
            self.attachments = dict(self.attachments)
            if self.attachments.get("image") is not None:
                im = np.ascontiguousarray(self.attachments["image"], dtype=np.uint8)
                if im.ndim != 3 or im.shape[-1] != 3:
                    raise ValueError(f"an attached image must be H×W×3, got {im.shape}")
                self.attachments["image"] = im
        if self.kind == "text":
            if not isinstance(self.clean, str) or not isinstance(self.output, str):
                raise TypeError("a text example needs str clean input and output")
        else:
            self.clean = np.ascontiguousarray(self.clean, dtype=np.uint8)
            self.output = np.ascontiguousarray(self.output, dtype=np.uint8)
            want = 4 if self.kind == "video" else 3
            if self.clean.ndim != want or self.clean.shape[-1] != 3:
                raise ValueError(f"a {self.kind} example needs a {'T×' if want == 4 else ''}H×W×3 array, "
                                 f"got {self.clean.shape}")
            if self.kind == "video" and not (self.fps and self.fps > 0):
                raise ValueError("a video example needs its frame rate (fps > 0)")

    @property
    def key(self) -> tuple:
        """Identity of the example: the same input, perturbation, variant, severity and seed (a PEELING test: also
        its test id, original expression and image, so tests of other images or expressions never collapse)."""
        r = self.record
        k = (r.get("input_hash"), r.get("name"), r.get("variant"), r.get("severity"), r.get("seed"))
        if r.get("name") == PEELING_P2:
            m = self.model or {}
            k += (m.get("uniq_id"), m.get("rawtext"), (r.get("input") or {}).get("image_hash"))
        if self.parts:  # a combined condition is another example than its parts alone
            k += tuple(p.key for p in self.parts)
        return k

    @property
    def is_peeling(self) -> bool:
        return self.record.get("name") == PEELING_P2

    def title(self) -> str:
        r = self.record
        return f"{r.get('name')} · {r.get('variant')} · severity {r.get('severity')} · seed {r.get('seed')}" + "".join(
            f" + {p.record.get('name')} · {p.record.get('variant')} · severity {p.record.get('severity')}"
            for p in self.parts or ())


def make_example(kind: str, clean, result, source: dict, *, label: str = "", fps: float | None = None,
                 model: dict | None = None, parts: list | None = None) -> Example:
    """An Example from a ``PerturbResult`` (``result.output``, ``result.record``); ``parts``: the other parts of a
    combined condition (Examples, see :class:`Example`)."""
    output, record = result
    return Example(kind=kind, clean=clean, output=output, record=dict(record), source=dict(source),
                   label=label or source.get("name") or kind, fps=fps, model=dict(model) if model else None,
                   parts=parts)


def combined_example(parts: list[tuple], *, model: dict | None = None, label: str = "") -> Example | None:
    """One basket Example for one condition of several perturbed parts (e.g. an image and its expression, grounded
    together): ``parts`` = ``[(kind, clean, PerturbResult or None, source, label), ...]``, the first the main one.

    A part that was not perturbed (None) or that changed nothing (a no-op, :func:`is_no_op`) is left out: the scores
    were computed on the same input without it, and a no-op is never exported as a perturbed example; ``model``
    gets ``"no_op": [{"modality", "perturbation", "variant", "severity", "seed"}, ...]`` naming what was left out
    for that reason. The first part that changed is the example, the others its ``parts``. None when no part
    changed anything."""
    model = dict(model) if model else None
    kept, skipped = [], []
    for kind, clean, result, source, lb in parts:
        if result is None:
            continue
        if is_no_op(result[1]):
            r = result[1]
            skipped.append({"modality": kind, "perturbation": r.get("name"), "variant": r.get("variant"),
                            "severity": r.get("severity"), "seed": r.get("seed")})
            continue
        kept.append(make_example(kind, clean, result, source, label=lb))
    if model is not None and skipped:
        model["no_op"] = skipped
    if not kept:
        return None
    main = kept[0]
    return make_example(main.kind, main.clean, (main.output, main.record), main.source,
                        label=label or main.label, fps=main.fps, model=model, parts=kept[1:] or None)


def _stage_unavailable(st: dict) -> bool:
    """A P2 stage skipped because something was missing here (weights, a dependency), not by a deterministic rule:
    switched off, the short-expression rule and "no word with a synonym" are decided by p2_chain itself (the last
    one with its details recorded), everything else it skips is unavailability."""
    reason = str(st.get("reason") or "")
    return bool(st.get("skipped")) and not st.get("details") and reason != "switched off" \
        and not reason.startswith("expression of <=")


def peeling_record(test, config, image=None) -> dict:
    """The record of a PEELING test's P2 part (``test``: a PeelingTest or its dict; ``config``: the run's
    PeelingConfig or its dict): regenerable with ``p2_chain(Reducetext, seed, **params)``.

    ``params["stages"]`` are the stages that ran (a stage that was unavailable here, e.g. back-translation without
    its WMT19 weights, left the text unchanged, and each stage draws from its own generator, so leaving it out
    regenerates the same text); ``requested_stages`` / the variant are the stages switched on."""
    t = test if isinstance(test, dict) else test.to_dict()
    c = config if isinstance(config, dict) else config.to_dict()
    requested = [s for s in P2_STAGES if s in (c.get("stages") or ())]
    stages = list(t.get("stages") or [])
    dropped = {s["stage"] for s in stages if s.get("stage") in requested and _stage_unavailable(s)}
    scorer = c.get("synonym_scorer", "minilm")
    params = {"stages": [s for s in requested if s not in dropped], "requested_stages": requested,
              "synonym_mode": c.get("synonym_mode", "paper"), "synonym_scorer": scorer,
              "synonym_threshold": c.get("synonym_threshold"), "short_len": c.get("short_len"),
              "synonym_senses": c.get("synonym_senses", 0), "synonym_derived": c.get("synonym_derived", True)}
    info = {"kind": "text", "chars": len(t["Reducetext"])}
    if image is not None:

        info["image_hash"] = hash_value(to_uint8_rgb(image))  # the image the test grounds on (not an input of P2)
    note = "PEELING P2 (back-translation -> synonym -> keyboard) on the reduced expression"
    if dropped:
        note += f"; unavailable when recorded: {', '.join(sorted(dropped))} (left out of params.stages)"
    if scorer is not None and not isinstance(scorer, str):
        note += "; a custom synonym scorer: not regenerable"
    return {"schema": SCHEMA, "name": PEELING_P2, "modality": "text", "variant": "+".join(requested) or "none",
            "severity": None, "seed": int(t["seed"]), "params": jsonable(params), "input": info,
            "versions": dict(versions()), "input_hash": hash_value(t["Reducetext"]),
            "output_hash": hash_value(t["MRtext"]), "note": note, "stages": jsonable(stages)}


def peeling_example(test, config, *, image, source: dict, model_id: str = "", vqa_model: str = "",
                    label: str = "") -> Example:
    """A basket Example of one PEELING test: clean = the reduced expression (P2's input), output = the final one,
    record = :func:`peeling_record`, model = the test's grounding and uniqueness results, and the image it was
    grounded on attached (for the OFA tsv)."""
    t = test if isinstance(test, dict) else test.to_dict()
    im = to_uint8_rgb(image)
    keys = ("rawtext", "Reducetext", "MRtext", "region", "pred_box", "iou", "issue", "reduce_box", "reduce_iou",
            "orig_box", "orig_iou", "uniqueness", "image_id", "uniq_id", "strategy", "properties", "world_valid")
    model = {"id": model_id, "view": "peeling", **{k: t.get(k) for k in keys}, "vqa_model": vqa_model,
             "scores": {"iou": t.get("iou"), "reduce_iou": t.get("reduce_iou"), "orig_iou": t.get("orig_iou")}}
    return Example(kind="text", clean=t["Reducetext"], output=t["MRtext"], record=peeling_record(t, config, im),
                   source=dict(source), label=label or f"{source.get('name') or 'image'}-peeling-{t['uniq_id']}",
                   model=jsonable(model), attachments={"image": im})


def builtin_source(collection: str, seed: int, index: int, name: str = "", **extra) -> dict:
    """Where a built-in world item came from: ``collection`` is "gallery" (images and captions,
    ``robustlab.datasets.synthetic.datasets.builtin_gallery``) or "video"
    (``robustlab.datasets.synthetic.world.sample_video``)."""
    return {"type": "builtin", "collection": collection, "seed": int(seed), "index": int(index),
            "name": name or f"{collection}-{seed}-{index:05d}", **extra}


def file_source(path: str, digest: str, nbytes: int, **extra) -> dict:
    """A local file read by the CLI: its path as given on the command line, the SHA-256 of its bytes
    (``"sha256:<hex>"``) and its size."""
    return {"type": "file", "name": Path(path).name, "path": str(path), "sha256": digest, "bytes": int(nbytes),
            **extra}


def typed_source(**extra) -> dict:
    """Text typed into the dashboard."""
    return {"type": "typed", "name": "typed", **extra}


class Basket:
    """An ordered collection of examples; adding the same example twice keeps one."""
    def __init__(self, items: list[Example] | None = None):
        self.items: list[Example] = list(items or [])

    def add(self, ex: Example) -> bool:
        """Add ``ex``; False (and nothing added) when an identical example is already in the basket."""
        if any(e.key == ex.key for e in self.items):
            return False
        self.items.append(ex)
        return True

    def remove(self, ex_id: str) -> bool:
        n = len(self.items)
        self.items = [e for e in self.items if e.id != ex_id]
        return len(self.items) != n

    def clear(self) -> None:
        self.items.clear()

    def signature(self) -> str:
        """Changes whenever the basket's content changes (for caching an export)."""
        return "|".join(e.id for e in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Example]:
        return iter(self.items)

    def __getitem__(self, i) -> Example:
        return self.items[i]


# ---- loading inputs ----------------------------------------------------------------------------------------
def filmstrip(frames: np.ndarray, n: int = 6, gap: int = 2) -> np.ndarray:
    """``n`` evenly spaced frames of a T×H×W×3 video side by side (white gaps), for thumbnails."""
    frames = np.asarray(frames)
    t = frames.shape[0]
    idx = np.unique(np.linspace(0, t - 1, min(n, t)).round().astype(int))
    h = frames.shape[1]
    sep = np.full((h, gap, 3), 255, np.uint8)
    parts = []
    for k, i in enumerate(idx):
        if k:
            parts.append(sep)
        parts.append(frames[i])
    return np.concatenate(parts, axis=1)
