"""Questions and answers about the synthetic world (VQA, ITM negatives, CLAVI-style temporal pairs).

Everything is generated from a scene's / video's structure (never from pixels), seeded, so every split is a
pure function of its seeds.

Image questions (``image_question``), one of these types:

    exist      "is there a red circle?"                    yes / no (balanced; negatives are near misses)
    color      "what colour is the small star?"            a colour (the target is named without its colour)
    shape      "what shape is the red object?"             a shape (named without its shape)
    count      "how many objects are there?"               1 .. 4
    position   "where is the blue square?"                 a position of the 3×3 layout ("top left", ...)

Questions agree in number and article: "is there an orange star?", "how many rings are in the image?" (the phrase
X of PEELING's count and "many" questions is pluralised by :func:`plural_phrase`).

Video questions (``video_question``):

    order      "does the red circle change before the blue square?"   yes / no; the two events concern
               different objects, so the question reads the same on the time-reversed video and its answer
               flips — the CLAVI-style complement pair (:func:`clavi_pair`)
    event_order "does the red circle move left before the blue square appears?"   yes / no (true order vs
               the swapped order of the same two events)
    event      "does the red circle move left?"            yes / no (negatives: other direction / kind / object)
    first      "what colour is the object that changes first?"   a colour (or "... last?")
    direction  "which way does the red circle move?"        left / right / up / down

``ANSWERS`` is the fixed answer vocabulary (stored in the tiny-vilt checkpoint's metadata).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robustlab.datasets.synthetic import world
from robustlab.datasets.synthetic.world import COLORS, DIRECTIONS, OPPOSITE, POSITIONS, SHAPES, Obj, Scene, VideoScene

COUNT_WORDS = ("1", "2", "3", "4")
ANSWERS: tuple[str, ...] = (("yes", "no") + tuple(COLORS) + SHAPES + COUNT_WORDS
                            + tuple(POSITIONS[k] for k in sorted(POSITIONS) if POSITIONS[k] not in DIRECTIONS)
                            + tuple(DIRECTIONS))
UNIQUENESS_ANSWERS = ("0",)  # "how many Xs are in the image?" can be 0 (PEELING's count question; tiny-vilt's stage 3)
ALL_ANSWERS = ANSWERS + UNIQUENESS_ANSWERS
IMAGE_TYPES = ("exist", "color", "shape", "count", "position")
VIDEO_TYPES = ("order", "event_order", "event", "first", "direction")
# Question types the built-in datasets do not ask but tiny-vilt is trained on, so that it can serve the methods
# that ask them: PEELING's uniqueness check (its three templates, about an object phrase X, worded as
# robustlab.diagnostics.peeling asks them by default: "how many Xs are in the image?" (0-4), "are there many Xs in
# the image?" (two or more), "is there a reflected X in the image?" (the world has no reflections: always "no"))
# and CLAVI's beginning/end questions and negative controls (an object that is not in the video).
PEELING_TYPES = ("count_of", "many", "reflected")
CLAVI_TYPES = ("be", "event_nc", "order_nc")


_IRREGULAR = {"man": "men", "woman": "women", "person": "people", "child": "children", "foot": "feet",
              "tooth": "teeth", "mouse": "mice", "goose": "geese", "ox": "oxen", "sheep": "sheep", "fish": "fish",
              "deer": "deer", "leaf": "leaves", "knife": "knives", "shelf": "shelves", "wife": "wives",
              "half": "halves", "loaf": "loaves", "wolf": "wolves", "life": "lives", "scarf": "scarves",
              "calf": "calves", "thief": "thieves", "cactus": "cacti", "bus": "buses", "glass": "glasses"}
# Words after which a phrase's head noun is done: "circle at the top left", "man in a car", "dog that sits".
_BOUNDARY = frozenset("at in on of with near behind beside besides next under over above below by from to into "
                      "onto between among against along across around inside outside who that which whose "
                      "is are has stands sits looks lies walks eats rides holds wears plays".split())


def plural(word: str) -> str:
    """The plural of one English noun ("ring" → "rings", "glass" → "glasses", "man" → "men", "person" →
    "people"); a rule set for the nouns robustlab's questions name, not a full inflector."""
    low = word.lower()
    if low in _IRREGULAR:
        p = _IRREGULAR[low]
    elif low.endswith("man") and low not in ("human", "german", "roman"):
        p = low[:-3] + "men"
    elif low.endswith(("s", "x", "z", "ch", "sh")):
        p = low + "es"
    elif low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        p = low[:-1] + "ies"
    else:
        p = low + "s"
    return p if word == low else (p.capitalize() if word == low.capitalize() else p.upper() if word.isupper() else p)


def plural_phrase(x: str) -> str:
    """An object phrase with its head noun in the plural: the word before the first preposition, relative pronoun,
    common verb or -ing word, else the last word ("red circle" → "red circles", "circle at the top left" →
    "circles at the top left", "man in a car" → "men in a car"). The built-in world's phrases always come out
    right."""
    words = x.split()
    if not words:
        return x
    head = len(words) - 1
    for i in range(1, len(words)):
        w = words[i].lower()  # a participle ("wearing a hat") is followed by more words; "building" ends a phrase
        if w in _BOUNDARY or (w.endswith("ing") and len(w) > 4 and i < len(words) - 1):
            head = i - 1
            break
    words[head] = plural(words[head])
    return " ".join(words)


def article(word: str) -> str:
    """The indefinite article before ``word``: "an" before a vowel ("an orange star"), else "a"."""
    return "an" if word[:1].lower() in "aeiou" else "a"


@dataclass
class QA:
    question: str
    answer: str
    qtype: str
    target: int = -1  # index of the object the question is about (-1: none / several); training supervision

    def to_dict(self) -> dict:
        return {"question": self.question, "answer": self.answer, "qtype": self.qtype}


def _unique(objs: list[Obj], t: int, attrs: tuple[str, ...]) -> bool:
    o = objs[t]
    return sum(all(getattr(p, a) == getattr(o, a) for a in attrs) for p in objs) == 1


def describe(objs: list[Obj], t: int, exclude: str, rng: np.random.Generator) -> str | None:
    """'the ...' naming objs[t] uniquely without the attribute ``exclude`` (None when impossible)."""
    o = objs[t]
    options = [("shape",), ("color",), ("size", "shape"), ("color", "shape"), ("size", "color", "shape"),
               ("shape", "position"), ("color", "position"), ("position",)]
    options = [a for a in options if exclude not in a and _unique(objs, t, a)]
    if not options:
        return None
    shortest = min(len(a) for a in options)
    short = [a for a in options if len(a) <= shortest + 1]
    attrs = short[int(rng.integers(len(short)))]
    words = [getattr(o, a) for a in ("size", "color", "shape") if a in attrs]
    if "shape" not in attrs:
        words.append("object")
    s = "the " + " ".join(words)
    if "position" in attrs:
        s += " " + world.pos_phrase(o.position)
    return s


def image_question(scene: Scene, rng: np.random.Generator, qtype: str | None = None) -> QA:
    """One question about ``scene`` (type drawn uniformly unless given; falls back when a type is impossible)."""
    objs = scene.objects
    types = [qtype] if qtype else list(rng.permutation(IMAGE_TYPES))
    for qt in types + list(IMAGE_TYPES):
        qa = _image_q(objs, qt, rng)
        if qa is not None:
            return qa
    raise AssertionError("unreachable: count questions always exist")  # pragma: no cover


PHRASE_ATTRIBUTES = (("shape",), ("color", "shape"), ("size", "shape"), ("texture", "shape"), ("shape", "position"),
                     ("size", "color", "shape"), ("color", "shape", "position"))


def object_phrase(objs: list[Obj], rng: np.random.Generator) -> tuple[str, int, int]:
    """An object phrase as PEELING's candidates read ("circle", "red circle", "circle at the top left"; no article)
    about a present object (85 %) or a near miss, with how many objects it fits and the one it names (-1 unless
    exactly one)."""
    o = objs[int(rng.integers(len(objs)))]
    attrs = PHRASE_ATTRIBUTES[int(rng.integers(len(PHRASE_ATTRIBUTES)))]
    if "texture" in attrs and o.texture == "solid":
        attrs = ("shape",)
    if rng.random() < 0.15:  # a near miss: another colour / shape / size than the object's
        o = Obj(**vars(o))
        a = str(rng.choice(["color", "shape", "size"] if "position" not in attrs else ["color", "shape"]))
        pool = {"color": list(COLORS), "shape": list(SHAPES), "size": ["small", "large"]}[a]
        setattr(o, a, str(rng.choice([v for v in pool if v != getattr(o, a)])))
        attrs = tuple(sorted(set(attrs) | {a}, key=("size", "texture", "color", "shape", "position").index))
    fits = [i for i, p in enumerate(objs) if all(getattr(p, a) == getattr(o, a) for a in attrs)]
    return world.expression_text(o, attrs, article=False), len(fits), (fits[0] if len(fits) == 1 else -1)


def _image_q(objs: list[Obj], qt: str, rng: np.random.Generator) -> QA | None:
    if qt in PEELING_TYPES:
        x, n, tgt = object_phrase(objs, rng)
        if qt == "count_of":
            return QA(f"how many {plural_phrase(x)} are in the image?", str(n), qt, tgt)
        if qt == "many":
            return QA(f"are there many {plural_phrase(x)} in the image?", "yes" if n >= 2 else "no", qt, tgt)
        return QA(f"is there a reflected {x} in the image?", "no", qt, tgt)
    if qt == "count":
        return QA(str(rng.choice(["how many objects are there?", "how many objects are in the image?",
                                  "how many shapes are there?"])), COUNT_WORDS[len(objs) - 1], "count")
    if qt == "exist":
        present = {(o.color, o.shape) for o in objs}
        tgt = -1
        if rng.random() < 0.5:
            tgt = int(rng.integers(len(objs)))
            o = objs[tgt]
            c, s, ans = o.color, o.shape, "yes"
        else:
            o = objs[int(rng.integers(len(objs)))]
            for _ in range(50):  # a near miss: keep the colour or the shape of a present object, or neither
                r = rng.random()
                c = o.color if r < 0.35 else str(rng.choice(list(COLORS)))
                s = o.shape if 0.35 <= r < 0.7 else str(rng.choice(SHAPES))
                if (c, s) not in present:
                    break
            ans = "no"
        a = article(c)
        return QA(f"is there {a} {c} {s}?" if rng.random() < 0.7 else f"is there {a} {c} {s} in the image?", ans,
                  "exist", tgt)
    t = int(rng.integers(len(objs)))
    if qt == "color":
        d = describe(objs, t, "color", rng)
        return None if d is None else QA(f"what colour is {d}?" if rng.random() < 0.7 else f"what color is {d}?",
                                         objs[t].color, "color", t)
    if qt == "shape":
        d = describe(objs, t, "shape", rng)
        return None if d is None else QA(f"what shape is {d}?", objs[t].shape, "shape", t)
    if qt == "position":
        d = describe(objs, t, "position", rng)
        return None if d is None else QA(f"where is {d}?", objs[t].position, "position", t)
    raise ValueError(f"unknown image question type {qt!r}")


# ---- videos -----------------------------------------------------------------------------------------
def _name(o: Obj) -> str:
    return f"the {o.color} {o.shape}"


def _verb(e, third: bool = False) -> str:
    if e.kind == "moves":
        return f"{'moves' if third else 'move'} {e.direction}"
    if third:
        return e.kind
    return {"appears": "appear", "disappears": "disappear"}[e.kind]


def video_question(video: VideoScene, rng: np.random.Generator, qtype: str | None = None) -> QA:
    types = [qtype] if qtype else list(rng.permutation(VIDEO_TYPES))
    for qt in types + list(VIDEO_TYPES):
        qa = _video_q(video, qt, rng)
        if qa is not None:
            return qa
    raise AssertionError("unreachable: event questions always exist")  # pragma: no cover


def order_question(video: VideoScene, rng: np.random.Generator) -> QA | None:
    """'does A change before/after B?' over the two events' objects (None when both events hit one object)."""
    e1, e2 = video.events
    if e1.obj == e2.obj:
        return None
    a, b = (e1, e2) if rng.random() < 0.5 else (e2, e1)
    rel = "before" if rng.random() < 0.5 else "after"
    a_first = a is e1
    ans = "yes" if (a_first == (rel == "before")) else "no"
    return QA(f"does {_name(video.objects[a.obj])} change {rel} {_name(video.objects[b.obj])}?", ans, "order",
              a.obj)


def _video_q(video: VideoScene, qt: str, rng: np.random.Generator) -> QA | None:
    objs, (e1, e2) = video.objects, video.events
    if qt == "order":
        return order_question(video, rng)
    if qt == "event_order":
        a, b = (e1, e2) if rng.random() < 0.5 else (e2, e1)
        rel = "before" if rng.random() < 0.5 else "after"
        ans = "yes" if ((a is e1) == (rel == "before")) else "no"
        sb = "it" if a.obj == b.obj else _name(objs[b.obj])
        return QA(f"does {_name(objs[a.obj])} {_verb(a)} {rel} {sb} {_verb(b, third=True)}?", ans, "event_order",
                  a.obj)
    if qt == "event":
        e = (e1, e2)[int(rng.integers(2))]
        o = objs[e.obj]
        if rng.random() < 0.5:
            return QA(f"does {_name(o)} {_verb(e)}?", "yes", "event", e.obj)
        happened = {(ev.obj, ev.kind, ev.direction) for ev in video.events}
        for _ in range(50):
            r = rng.random()
            i = e.obj if r < 0.7 else int(rng.integers(len(objs)))
            kind = str(rng.choice(["moves", "moves", "appears", "disappears"]))
            d = str(rng.choice(list(DIRECTIONS))) if kind == "moves" else ""
            if r < 0.35 and e.kind == "moves":
                kind, d = "moves", OPPOSITE[e.direction]
            if (i, kind, d) not in happened:
                break
        fake = world.Event(obj=i, kind=kind, direction=d)
        return QA(f"does {_name(objs[i])} {_verb(fake)}?", "no", "event", i)
    if qt == "first":
        if e1.obj == e2.obj:
            return None
        which = "first" if rng.random() < 0.5 else "last"
        e = e1 if which == "first" else e2
        return QA(f"what colour is the object that changes {which}?", objs[e.obj].color, "first", e.obj)
    if qt == "be":
        e = (e1, e2)[int(rng.integers(2))]
        if e1.obj == e2.obj and e1.kind == e2.kind and e1.direction == e2.direction:
            return None
        where = "beginning" if rng.random() < 0.5 else "end"
        ans = "yes" if ((e is e1) == (where == "beginning")) else "no"
        return QA(f"does {_name(objs[e.obj])} {_verb(e)} at the {where}?", ans, "be", e.obj)
    if qt in ("event_nc", "order_nc"):
        c = absent_event(video, rng)
        if qt == "event_nc":
            return QA(f"does {c[0]} {_verb(c[1])}?", "no", qt, -1)
        e = (e1, e2)[int(rng.integers(2))]
        rel = "before" if rng.random() < 0.5 else "after"
        if rng.random() < 0.5:
            return QA(f"does {_name(objs[e.obj])} {_verb(e)} {rel} {c[0]} {_verb(c[1], third=True)}?", "no", qt, e.obj)
        return QA(f"does {c[0]} {_verb(c[1])} {rel} {_name(objs[e.obj])} {_verb(e, third=True)}?", "no", qt, e.obj)
    if qt == "direction":
        moves = [e for e in (e1, e2) if e.kind == "moves"]
        if not moves:
            return None
        e = moves[int(rng.integers(len(moves)))]
        if sum(ev.obj == e.obj and ev.kind == "moves" for ev in (e1, e2)) > 1:
            return None
        return QA(f"which way does {_name(objs[e.obj])} move?", e.direction, "direction", e.obj)
    raise ValueError(f"unknown video question type {qt!r}")


def absent_event(video: VideoScene, rng: np.random.Generator) -> tuple[str, "world.Event"]:
    """CLAVI's negative control C: an event of an object that is not in the video (a colour and a shape the video
    has neither of, so that it shares no object with it), as (its name, the event)."""
    colors = [c for c in COLORS if c not in {o.color for o in video.objects}]
    shapes = [s for s in SHAPES if s not in {o.shape for o in video.objects}]
    kind = str(rng.choice(["moves", "moves", "appears", "disappears"]))
    e = world.Event(obj=-1, kind=kind, direction=str(rng.choice(list(DIRECTIONS))) if kind == "moves" else "")
    return f"the {rng.choice(colors)} {rng.choice(shapes)}", e


def clavi_pair(video: VideoScene, rng: np.random.Generator) -> tuple[QA, QA] | None:
    """The CLAVI-style complement pair: (question + answer on the video, same question + answer on the
    time-reversed video, where the two events come in swapped order). None when both events hit one object."""
    qa = order_question(video, rng)
    if qa is None:
        return None
    flipped = QA(qa.question, "no" if qa.answer == "yes" else "yes", "order", qa.target)
    return qa, flipped


# ---- image–text matching negatives ---------------------------------------------------------------------
def mismatched_caption(scene: Scene, rng: np.random.Generator) -> str:
    """A hard negative: the scene's caption with one object's colour, shape or position changed."""
    objs = [Obj(**vars(o)) for o in scene.objects]
    t = int(rng.integers(len(objs)))
    o = objs[t]
    what = rng.choice(["color", "shape", "position"])
    if what == "color":
        o.color = str(rng.choice([c for c in COLORS if c != o.color]))
    elif what == "shape":
        o.shape = str(rng.choice([s for s in SHAPES if s != o.shape]))
    else:
        used = {tuple(p.cell) for p in objs}
        free = [c for c in POSITIONS if c not in used]
        o.cell = free[int(rng.integers(len(free)))]
    template = int(rng.integers(len(world.TEMPLATES)))
    return world.caption_for(objs, scene.background, template=template, rng=rng)


def frame_indices(n_total: int, n: int) -> np.ndarray:
    """The frames :func:`robustlab.models.tasks.sample_frames` picks: centres of ``n`` equal segments."""
    return np.clip(np.floor((np.arange(n) + 0.5) * n_total / n).astype(int), 0, n_total - 1)


_RELATION_FLIP = {"before": "after", "after": "before", "first": "last", "last": "first", "beginning": "end",
                  "end": "beginning"}


def relation_flip(video: VideoScene, q: QA) -> QA | None:
    """The same question about the same video with its temporal relation word swapped (before ↔ after,
    first ↔ last) and the answer that makes true: yes ↔ no for order questions; for "which changes first/last",
    the other event's object (its colour is the answer, it is the new target). None for questions without a
    relation word. A counterfactual partner: the two differ only in the relation word."""
    words = q.question[:-1].split(" ")
    at = [i for i, w in enumerate(words) if w in _RELATION_FLIP]
    if q.qtype not in ("order", "event_order", "first", "be") or len(at) != 1:
        return None
    words[at[0]] = _RELATION_FLIP[words[at[0]]]
    text = " ".join(words) + q.question[-1]
    if q.qtype == "first":
        e1, e2 = video.events
        e = e1 if words[at[0]] == "first" else e2
        return QA(text, video.objects[e.obj].color, "first", e.obj)
    return QA(text, "no" if q.answer == "yes" else "yes", q.qtype, q.target)


def video_frames_at(video: VideoScene, idx, size: int = 64) -> np.ndarray:
    """Frames ``idx`` of ``world.render_video(video, size)``, bit-identical, without rendering the others."""
    rng = world._rng(video.seed, video.index, 98)
    bg = world._background(video.background, size * 2, rng)
    return np.stack([world.render_objects([o for o in world._state_at(video, int(t)) if o is not None],
                                          video.background, size, rng, background=bg) for t in idx])


__all__ = ["plural", "plural_phrase", "article",
           "ANSWERS", "UNIQUENESS_ANSWERS", "ALL_ANSWERS", "IMAGE_TYPES", "VIDEO_TYPES", "PEELING_TYPES", "CLAVI_TYPES",
           "object_phrase", "absent_event", "QA", "image_question", "video_question", "order_question",
           "clavi_pair", "relation_flip", "mismatched_caption", "describe", "frame_indices", "video_frames_at"]
