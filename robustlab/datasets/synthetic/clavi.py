"""CLAVI pairs on the built-in event videos (:mod:`robustlab.datasets.clavi` builds pairs and questions for any
video; :mod:`robustlab.diagnostics.clavi` has the method and the metrics).

A built-in video qualifies when its two events concern different objects (CLAVI's two distinct, uniquely
occurring actions); action A is the first event's frame interval, B the second's. The questions use the world's
own templates — the phrasing tiny-vilt is trained on — with C an event of an object the video does not have
(:func:`robustlab.datasets.synthetic.qa.absent_event`, sharing no object with it):

    E      "does the red circle move left?"
    BE     "does the red circle move left at the beginning?"
    BA     "does the red circle move left before the blue square appears?"

Two complements:

* ``"swap"`` (the paper's): the boundary-extended action segments of the rendered video swapped, with random
  extensions (seeded); V′ has two seams where the scene jumps, as the paper's have.
* ``"render"`` (not in the paper): the same world re-rendered with the two events' time slots exchanged, trimmed
  to the same frames — a complement without seams, possible only because the world is generated. Comparing the
  two shows how much of a model's behaviour on V′ is the seams.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from robustlab.datasets.synthetic import qa, world
from robustlab.datasets.clavi import Action, Pair, Templates, complement, extensions, questions

WORLD_TEMPLATES = Templates(
    exist=lambda x: f"does {x.subject} {x.text}?",
    be=lambda x, w: f"does {x.subject} {x.text} at the {w}?",
    ba=lambda x, rel, y: f"does {x.subject} {x.text} {rel} {y.clause}?",
    name="world")
METHODS = ("swap", "render")


def eligible(video: world.VideoScene) -> bool:
    e1, e2 = video.events
    return e1.obj != e2.obj


def _action(name: str, e) -> Action:
    return Action(text=qa._verb(e), clause=f"{name} {qa._verb(e, third=True)}", subject=name)


def actions(video: world.VideoScene, rng: np.random.Generator) -> tuple[Action, Action, Action]:
    """A (first event), B (second) and the negative control C."""
    e1, e2 = video.events
    a = _action(qa._name(video.objects[e1.obj]), e1)
    b = _action(qa._name(video.objects[e2.obj]), e2)
    name, ce = qa.absent_event(video, rng)
    return a, b, _action(name, ce)


def swapped_video(video: world.VideoScene) -> world.VideoScene:
    """The same world with the two events exchanged between their time slots (B's change in A's slot)."""
    e1, e2 = video.events
    return replace(video, events=[replace(e2, start=e1.start, end=e1.end), replace(e1, start=e2.start, end=e2.end)])


def world_pair(video: world.VideoScene, frames: np.ndarray, seed: int, method: str = "swap", size: int = 64):
    """(Pair, the 19 questions, A, B, C) for an eligible built-in video whose rendered ``frames`` are given."""
    if method not in METHODS:
        raise ValueError(f"unknown CLAVI complement {method!r}; one of {', '.join(METHODS)}")
    e1, e2 = video.events
    rng = np.random.default_rng([int(seed), video.index, 61])
    a_iv, b_iv = (e1.start, e1.end), (e2.start, e2.end)
    ext = extensions(a_iv, b_iv, len(frames), rng)
    pair = complement(frames, a_iv, b_iv, ext)
    if method == "render":
        sw = swapped_video(video)
        c = qa.video_frames_at(sw, np.arange(ext.out_a, ext.out_b), size)
        pair = Pair(video=pair.video, complement=c, extension=ext, a=pair.a, b=pair.b, a_in_v=pair.a_in_v,
                    b_in_v=pair.b_in_v, a_in_c=pair.b_in_v, b_in_c=pair.a_in_v, seams=(), method="render")
    a, b, c_act = actions(video, rng)
    return pair, questions(a, b, c_act, WORLD_TEMPLATES), a, b, c_act


__all__ = ["WORLD_TEMPLATES", "METHODS", "eligible", "actions", "swapped_video", "world_pair"]
