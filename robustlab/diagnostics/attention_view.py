"""The Attention page's data, UI-free: one (visual, question) through a fusion model, clean and under each QUAG
short-circuit (Rawal et al. App. A.3, Fig. 5: the attention matrices before and after, on one colour scale), the
attention of a text token over the visual patch grid, the answer distributions, and Table 1 over dataset items.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from robustlab.diagnostics import quag
from robustlab.models.interventions import check, replace_for

BASELINE = "baseline"


@dataclass
class AttentionView:
    """Captures of one input: ``captures[name]`` for ``baseline`` and each ablation (a preset name, a quadrant set
    such as ``VV+TV``, or ``quag-attention:<mode>``)."""
    captures: dict
    question: str
    layout: object  # the model's per-position TokenLayout (robustlab.models.attention)
    spans: quag.TokenLayout
    notes: dict = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.captures)

    @property
    def n_layers(self) -> int:
        return self.captures[BASELINE].n_layers

    @property
    def n_heads(self) -> int:
        return self.captures[BASELINE].n_heads

    def matrix(self, name: str, layer: int, head: Optional[int] = None) -> np.ndarray:
        """N × N attention of one layer (one head, or the heads' mean when ``head`` is None)."""
        a = self.captures[name].attentions[int(layer)]
        return a.mean(0) if head is None else a[int(head)]

    def text_tokens(self) -> list[tuple[int, str]]:
        """(position, label) of the valid text tokens ([CLS] first), for the token picker."""
        lay = self.layout
        return [(int(i), str(lay.tokens[i]) if i < len(lay.tokens) else str(i))
                for i in np.flatnonzero((lay.modality == "text") & ~lay.is_pad)]

    def token_map(self, name: str, layer: int, head: Optional[int], position: int) -> np.ndarray:
        """The attention of the query at ``position`` over the visual *patch* tokens, as frames × rows × cols (image
        CLS tokens and padding left out): what the page draws on the image or frames."""
        lay = self.layout
        row = self.matrix(name, layer, head)[int(position)]
        g = tuple(int(x) for x in lay.grid)
        frames = max(int(lay.n_frames), 1)
        out = np.zeros((frames, g[0], g[1]), np.float32)
        for i in np.flatnonzero(lay.is_patch):
            r, c = (int(x) for x in lay.patch[i])
            f = int(lay.frame[i]) if int(lay.frame[i]) >= 0 else 0
            if 0 <= r < g[0] and 0 <= c < g[1] and f < frames:
                out[f, r, c] = row[i]
        return out

    def answers(self, name: str, top: int = 5) -> dict[str, float]:
        """The ``top`` answers and their probabilities under ``name``."""
        o = self.captures[name].outputs
        scores = o.get("vqa_scores") or o.get("scores") or {}
        return dict(sorted(scores.items(), key=lambda kv: -kv[1])[:top])

    def answer(self, name: str) -> str:
        o = self.captures[name].outputs
        return str(o.get("vqa_answer") or o.get("answer") or "")

    def quadrant_mass(self, name: str, layer: int, head: Optional[int] = None) -> dict[str, float]:
        """Mean attention mass each valid query puts on each quadrant's keys (rows of a modality, keys of another)."""
        a = self.matrix(name, layer, head)
        t, v = self.spans.masks(1, a.shape[0])
        by = {"T": np.asarray(t[0]), "V": np.asarray(v[0])}
        out = {}
        for q in quag.QUADRANTS:
            rows, cols = by[q[0]], by[q[1]]
            out[q] = float(a[np.ix_(rows, cols)].sum(1).mean()) if rows.any() and cols.any() else float("nan")
        return out

    def change(self, name: str, layer: int, head: Optional[int] = None) -> float:
        """Mean absolute difference from the baseline's attention over the valid query rows (0 for the baseline)."""
        a, b = self.matrix(name, layer, head), self.matrix(BASELINE, layer, head)
        rows = ~np.asarray(self.layout.is_pad, bool)
        return float(np.abs(a - b)[rows].sum(1).mean())

    def csv(self, layer: int, head: Optional[int]) -> str:
        """Every shown matrix as long-form CSV: ablation, query, key, their labels and modalities, weight."""
        lay = self.layout
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["ablation", "layer", "head", "query", "key", "query_token", "key_token", "query_modality",
                    "key_modality", "weight"])
        labels = list(lay.tokens) or [str(i) for i in range(len(lay))]
        for name in self.captures:
            a = self.matrix(name, layer, head)
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    w.writerow([name, layer, "mean" if head is None else head, i, j, labels[i], labels[j],
                                lay.modality[i], lay.modality[j], f"{a[i, j]:.6g}"])
        return buf.getvalue()


def ablation_view(model, visual, question: str, ablations: Sequence[str] = tuple(quag.PRESETS),
                  layers: Optional[Sequence[int]] = None) -> AttentionView:
    """Run ``model.forward_with_attention`` on the input clean and under each ablation (QUAG on every fusion
    layer, or on ``layers`` only — an extra, not in the paper)."""
    if not callable(getattr(model, "forward_with_attention", None)):
        mid = getattr(model, "model_id", type(model).__name__)
        raise ValueError(f"{mid} exposes no fusion attention; pick builtin:tiny-vilt or an hf-vilt model")
    base = model.forward_with_attention(visual, question)
    caps = {BASELINE: base}
    notes = {BASELINE: "no intervention"}
    for name in ablations:
        if name in caps:
            continue
        if name.startswith("quag-attention:"):

            check(name, model)
            rep = replace_for(name)
            notes[name] = f"QUAG-attention {rep.mode}, {rep.correction} correction (the equivalent N × N attention)"
        else:
            S = quag.quadrant_set(name)
            rep = quag.replace_fn(S, layers=layers)
            notes[name] = quag.PRESET_NOTES.get(quag.preset_name(S) or "", "quadrants " + "+".join(sorted(S)))
        caps[name] = model.forward_with_attention(visual, question, replace=rep)
    return AttentionView(captures=caps, question=question, layout=base.layout,
                         spans=quag.TokenLayout.from_model(base.layout), notes=notes)


__all__ = ["AttentionView", "ablation_view", "BASELINE"]
