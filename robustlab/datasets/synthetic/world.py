"""The built-in synthetic world: seeded CLEVR-like scenes, captions, referring expressions and event videos.

Everything is a pure function of ``(seed, index)``: the same scene comes back on every machine, so held-out
splits are just other seeds, and nothing large is committed.

Scenes: 1-4 objects on a 3×3 layout grid (jittered), each with a shape, colour, size and optionally a
texture (solid or striped), on a background of one of several tones with a gentle gradient. Captions come
from varied templates and mention every object; referring expressions name one target with the fewest
attributes that make it unique, plus its box.

Videos (16-32 frames): 1-3 objects; two events in sequence, each an object moving in a direction, appearing
or disappearing. The caption states the events in order ("..., then ..."), so reversing time changes the
right caption: :func:`reverse_video_caption` gives the caption of the time-reversed video.
"""
from __future__ import annotations

import functools

from dataclasses import asdict, dataclass, field

import numpy as np
from PIL import Image, ImageDraw

SHAPES = ("circle", "square", "triangle", "diamond", "star", "ring")
COLORS = {
    "red": (220, 40, 40),
    "green": (40, 170, 60),
    "blue": (40, 80, 225),
    "yellow": (235, 215, 40),
    "purple": (140, 60, 190),
    "orange": (245, 140, 20),
    "cyan": (40, 210, 220),
    "pink": (245, 130, 190),
}
SIZES = {"small": 0.12, "large": 0.26}  # side/diameter as a fraction of the image
BACKGROUNDS = {
    "gray": (128, 128, 128),
    "black": (25, 25, 30),
    "white": (235, 235, 230),
    "brown": (110, 80, 50),
}
TEXTURES = ("solid", "striped")
# 3×3 layout grid: (row, col) -> name
POSITIONS = {
    (0, 0): "top left", (0, 1): "top", (0, 2): "top right",
    (1, 0): "left", (1, 1): "center", (1, 2): "right",
    (2, 0): "bottom left", (2, 1): "bottom", (2, 2): "bottom right",
}
N_OBJECTS_P = (0.3, 0.35, 0.25, 0.10)  # P(1), P(2), P(3), P(4)


@dataclass
class Obj:
    shape: str
    color: str
    size: str
    cell: tuple[int, int]
    cx: float  # centre, fraction of width
    cy: float  # centre, fraction of height
    texture: str = "solid"

    @property
    def position(self) -> str:
        return POSITIONS[tuple(self.cell)]

    def phrase(self, with_pos: bool = True, with_texture: bool = True) -> str:
        tex = "striped " if (with_texture and self.texture == "striped") else ""
        s = f"{self.size} {tex}{self.color} {self.shape}"
        return f"{s} {pos_phrase(self.position)}" if with_pos else s

    def box(self, size: int) -> tuple[float, float, float, float]:
        half = SIZES[self.size] * size / 2
        return (self.cx * size - half, self.cy * size - half, self.cx * size + half, self.cy * size + half)


def pos_phrase(pos: str) -> str:
    return "in the center" if pos == "center" else (f"at the {pos}" if " " not in pos else f"at the {pos}")


@dataclass
class Scene:
    seed: int
    index: int
    background: str
    objects: list[Obj]
    caption: str
    captions: list[str] = field(default_factory=list)  # alternative phrasings of the same scene

    def to_dict(self) -> dict:
        return asdict(self)


def _rng(seed: int, index: int, stream: int = 0) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(index), int(stream)])


def sample_scene(seed: int, index: int, n_objects: int | None = None, textures: bool = True) -> Scene:
    rng = _rng(seed, index)
    n = n_objects or int(rng.choice(4, p=N_OBJECTS_P)) + 1
    cells = [tuple(map(int, divmod(int(c), 3))) for c in rng.choice(9, size=n, replace=False)]
    objs = []
    for cell in cells:
        size = str(rng.choice(list(SIZES)))
        # keep inside the cell so that positions stay describable and objects rarely overlap
        jitter = (1 / 3 - SIZES[size]) / 2
        cx = (cell[1] + 0.5) / 3 + rng.uniform(-jitter, jitter) * 0.8
        cy = (cell[0] + 0.5) / 3 + rng.uniform(-jitter, jitter) * 0.8
        tex = str(rng.choice(TEXTURES, p=(0.8, 0.2))) if textures else "solid"
        objs.append(Obj(shape=str(rng.choice(SHAPES)), color=str(rng.choice(list(COLORS))), size=size,
                        cell=cell, cx=float(cx), cy=float(cy), texture=tex))
    bg = str(rng.choice(list(BACKGROUNDS)))
    caps = [caption_for(objs, bg, template=t, rng=_rng(seed, index, 1 + t)) for t in range(len(TEMPLATES))]
    main = caps[int(rng.integers(len(caps)))]
    return Scene(seed=seed, index=index, background=bg, objects=objs, caption=main, captions=caps)


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _join(parts: list[str]) -> str:
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _t0(ph, bg):
    return f"{_join(ph)} on a {bg} background"


def _t1(ph, bg):
    return f"a {bg} background with {_join(ph)}"


def _t2(ph, bg):
    return f"there is {_join(ph)} on {_article(bg)} {bg} background"


def _t3(ph, bg):
    n = len(ph)
    lead = "one object" if n == 1 else f"{['', 'one', 'two', 'three', 'four'][n]} objects"
    return f"{lead} on {bg}: {_join(ph)}"


TEMPLATES = (_t0, _t1, _t2, _t3)


def caption_for(objs: list[Obj], bg: str, template: int = 0, rng: np.random.Generator | None = None) -> str:
    order = list(range(len(objs)))
    if rng is not None:
        rng.shuffle(order)
    ph = [_article(objs[i].size) + " " + objs[i].phrase() for i in order]
    return TEMPLATES[template % len(TEMPLATES)](ph, bg)


# ---- rendering --------------------------------------------------------------------------------------
def _shape_polygon(shape: str, cx: float, cy: float, r: float):
    if shape == "square":
        return [(cx - r, cy - r), (cx + r, cy - r), (cx + r, cy + r), (cx - r, cy + r)]
    if shape == "triangle":
        return [(cx, cy - r), (cx + r, cy + r * 0.85), (cx - r, cy + r * 0.85)]
    if shape == "diamond":
        return [(cx, cy - r * 1.1), (cx + r * 1.1, cy), (cx, cy + r * 1.1), (cx - r * 1.1, cy)]
    if shape == "star":
        ang = np.pi / 2 + np.arange(10) * np.pi / 5
        rad = np.where(np.arange(10) % 2 == 0, r * 1.15, r * 0.48)
        return [(cx + float(a) * np.cos(t), cy - float(a) * np.sin(t)) for a, t in zip(rad, ang)]
    raise ValueError(shape)


def _draw_shape(draw: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, r: float, fill, outline, width: int):
    """Fill one shape (a ring is a thick circle outline: fine detail that blur and noise destroy first)."""
    if shape == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill, outline=outline, width=width)
    elif shape == "ring":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=fill, width=max(2, int(r * 0.4)))
    else:
        draw.polygon(_shape_polygon(shape, cx, cy, r), fill=fill, outline=outline, width=width)


@functools.lru_cache(maxsize=8)
def _centred_grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """(x - 0.5, y - 0.5) over a size × size grid of [0, 1] coordinates, float32 (read-only, shared)."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / max(size - 1, 1)
    xm, ym = xx - 0.5, yy - 0.5
    xm.flags.writeable = ym.flags.writeable = False
    return xm, ym


def _gradient(size: int, rng: np.random.Generator) -> np.ndarray:
    """A linear brightness ramp at a random angle (float64): two draws from ``rng``, angle then strength."""
    xm, ym = _centred_grid(size)
    ang = rng.uniform(0, 2 * np.pi)
    grad = np.multiply(xm, np.cos(ang), dtype=np.float64)  # (in place: the same IEEE operations, fewer copies)
    grad += np.multiply(ym, np.sin(ang), dtype=np.float64)
    grad *= rng.uniform(20, 45)
    return grad


def _background(bg: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """The background ``bg`` with a random ramp, float64 in [0, 255], size × size × 3."""
    base = np.array(BACKGROUNDS[bg], np.float32)
    return np.clip(base[None, None, :] + _gradient(size, rng)[..., None], 0, 255)


def _background_u8(bg: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """``_background(bg, size, rng).astype(np.uint8)``, bit for bit, a channel at a time (a third of the memory
    traffic: the built-in gallery renders 300 of these before a page can rank)."""
    base = np.array(BACKGROUNDS[bg], np.float32)
    grad = _gradient(size, rng)
    out = np.empty((size, size, 3), np.uint8)
    tmp = np.empty_like(grad)
    for c in range(3):
        np.add(grad, base[c], out=tmp)  # float64 + float32 scalar -> float64, as the broadcast sum
        np.clip(tmp, 0, 255, out=tmp)
        out[..., c] = tmp  # the same float64 -> uint8 cast as astype
    return out


def render_objects(objs: list[Obj], bg: str, size: int, rng: np.random.Generator, supersample: int = 2,
                   background: np.ndarray | None = None) -> np.ndarray:
    S = size * supersample
    base = _background_u8(bg, S, rng) if background is None else background.astype(np.uint8)
    im = Image.fromarray(base)
    draw = ImageDraw.Draw(im)
    for o in objs:
        col = np.array(COLORS[o.color], np.float32)
        shade = tuple(int(v) for v in np.clip(col * 0.6, 0, 255))
        cx, cy, r = o.cx * S, o.cy * S, SIZES[o.size] * S / 2
        _draw_shape(draw, o.shape, cx, cy, r, tuple(int(v) for v in col), shade, max(1, S // 64))
        if o.texture == "striped":
            # dark diagonal stripes clipped to the shape's mask
            mask = Image.new("L", im.size, 0)
            _draw_shape(ImageDraw.Draw(mask), o.shape, cx, cy, r, 255, None, 0)
            stripes = Image.new("L", im.size, 0)
            sd = ImageDraw.Draw(stripes)
            step = max(3, int(r / 2.2))
            for k in range(-S, 2 * S, step):
                sd.line([(k, 0), (k + S, S)], fill=255, width=max(1, step // 3))
            m = np.minimum(np.asarray(mask), np.asarray(stripes))
            im.paste(Image.new("RGB", im.size, shade), (0, 0), Image.fromarray(m))
    if supersample > 1:
        im = im.resize((size, size), Image.BOX)
    return np.asarray(im, np.uint8).copy()


def render_scene(scene: Scene, size: int = 128) -> np.ndarray:
    return render_objects(scene.objects, scene.background, size, _rng(scene.seed, scene.index, 99))


# ---- referring expressions --------------------------------------------------------------------------
def referring_expression(scene: Scene, target: int, size: int = 128) -> dict:
    """The shortest description that singles out ``scene.objects[target]``, with its box (x0, y0, x1, y1) px."""
    objs = scene.objects
    t = objs[target]
    candidates = [
        ("shape",), ("color", "shape"), ("size", "color", "shape"), ("size", "texture", "color", "shape"),
        ("color", "shape", "position"), ("size", "texture", "color", "shape", "position"),
    ]

    def matches(o: Obj, attrs) -> bool:
        return all(getattr(o, a) == getattr(t, a) for a in attrs)

    chosen = candidates[-1]
    for attrs in candidates:
        if sum(matches(o, attrs) for o in objs) == 1:
            chosen = attrs
            break
    words = []
    for a in ("size", "texture", "color", "shape"):
        if a in chosen and not (a == "texture" and t.texture == "solid"):
            words.append(getattr(t, a))
    expr = "the " + " ".join(words)
    if "position" in chosen:
        expr += " " + pos_phrase(t.position)
    return dict(expression=expr, box=[round(v, 2) for v in t.box(size)], target=target, attributes=list(chosen))


EXTRA_ATTRIBUTES = ("size", "texture", "color", "position")  # what an over-specified expression may add


def expression_text(o: Obj, attrs, article: bool = True) -> str:
    """The words for ``attrs`` of ``o`` in the world's fixed order (size, texture, colour, shape, position);
    "object" stands in when the shape is not named, a solid texture is never said."""
    words = [getattr(o, a) for a in ("size", "texture", "color") if a in attrs
             and not (a == "texture" and o.texture == "solid")]
    words.append(o.shape if "shape" in attrs else "object")
    s = ("the " if article else "") + " ".join(words)
    return s + " " + pos_phrase(o.position) if "position" in attrs else s


def overspecified_expression(scene: Scene, target: int, rng: np.random.Generator, size: int = 128) -> dict:
    """A human-like referring expression for ``scene.objects[target]``: the shortest unique description
    (:func:`referring_expression`) plus one or more redundant attributes (size, texture when striped, colour,
    position) drawn at random, so that (as in RefCOCO, where PEELING found 46 % of expressions redundant) a
    shorter expression often still singles the object out. ``minimal`` is the shortest description's attributes."""
    ref = referring_expression(scene, target, size)
    o = scene.objects[target]
    minimal = list(ref["attributes"])
    free = [a for a in EXTRA_ATTRIBUTES if a not in minimal and not (a == "texture" and o.texture == "solid")]
    attrs = list(minimal) if "shape" in minimal else minimal + ["shape"]
    if free:
        k = int(rng.integers(1, len(free) + 1))
        attrs += [str(a) for a in rng.choice(free, size=k, replace=False)]
    order = ("size", "texture", "color", "shape", "position")
    attrs = [a for a in order if a in attrs]
    return dict(expression=expression_text(o, attrs), box=ref["box"], target=target, attributes=attrs,
                minimal=minimal)


# ---- videos -----------------------------------------------------------------------------------------
DIRECTIONS = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}
OPPOSITE = {"left": "right", "right": "left", "up": "down", "down": "up", "appears": "disappears",
            "disappears": "appears"}


@dataclass
class Event:
    obj: int  # index into VideoScene.objects
    kind: str  # "moves" | "appears" | "disappears"
    direction: str = ""  # for moves
    start: int = 0
    end: int = 0  # frame indices [start, end)

    def verb(self) -> str:
        return f"moves {self.direction}" if self.kind == "moves" else self.kind


@dataclass
class VideoScene:
    seed: int
    index: int
    n_frames: int
    background: str
    objects: list[Obj]
    events: list[Event]
    caption: str
    reversed_caption: str

    def to_dict(self) -> dict:
        return asdict(self)


def _event_text(objs: list[Obj], e: Event, reverse: bool = False) -> str:
    o = objs[e.obj]
    if e.kind == "moves":
        verb = f"moves {OPPOSITE[e.direction] if reverse else e.direction}"
    else:
        verb = OPPOSITE[e.kind] if reverse else e.kind
    return f"the {o.color} {o.shape} {verb}"


def video_caption(objs: list[Obj], events: list[Event], reverse: bool = False) -> str:
    seq = list(reversed(events)) if reverse else list(events)
    parts = [_event_text(objs, e, reverse) for e in seq]
    return parts[0] + ", then " + ", then ".join(parts[1:]) if len(parts) > 1 else parts[0]


def reverse_video_caption(video: VideoScene) -> str:
    return video.reversed_caption


def sample_video(seed: int, index: int, n_frames: int | None = None) -> VideoScene:
    rng = _rng(seed, index, 7)
    T = int(n_frames or rng.integers(16, 33))
    n = int(rng.integers(1, 4))
    # distinct (colour, shape) pairs so that "the red circle" names one object
    pairs = set()
    while len(pairs) < n:
        pairs.add((str(rng.choice(list(COLORS))), str(rng.choice(SHAPES))))
    cells = [tuple(map(int, divmod(int(c), 3))) for c in rng.choice(9, size=n, replace=False)]
    objs = [Obj(shape=s, color=c, size="small", cell=cell, cx=(cell[1] + 0.5) / 3, cy=(cell[0] + 0.5) / 3)
            for (c, s), cell in zip(sorted(pairs), cells)]
    mid = T // 2
    events = []
    for k, (a, b) in enumerate(((1, mid - 1), (mid + 1, T - 1))):
        i = int(rng.integers(n))
        kinds = ["moves", "moves", "appears", "disappears"]
        if k == 0 and n == 1:
            kinds = ["moves", "moves", "appears"]  # a lone object that disappears first could do nothing after
        if k == 1 and events[0].obj == i:
            # the same object again: it must be visible before this event and after the first one, and
            # "appears, then disappears" would read the same reversed
            kinds = None if events[0].kind == "disappears" else (
                ["moves"] if events[0].kind == "appears" else ["moves", "moves", "disappears"])
        if kinds is None:  # the first event removed this object: pick another one
            i = (i + 1 + int(rng.integers(max(n - 1, 1)))) % n
            kinds = ["moves", "moves", "appears", "disappears"]
        kind = str(rng.choice(kinds))
        dirs = list(DIRECTIONS)
        if k == 1 and kind == "moves" and events[0].obj == i and events[0].kind == "moves":
            dirs.remove(OPPOSITE[events[0].direction])  # "down, then up" reads the same reversed: avoid it
        d = str(rng.choice(dirs)) if kind == "moves" else ""
        events.append(Event(obj=i, kind=kind, direction=d, start=int(a), end=int(b)))
    bg = str(rng.choice(list(BACKGROUNDS)))
    return VideoScene(seed=seed, index=index, n_frames=T, background=bg, objects=objs, events=events,
                      caption=video_caption(objs, events), reversed_caption=video_caption(objs, events, True))


def _state_at(video: VideoScene, t: int) -> list[Obj | None]:
    """Objects as they are at frame t (None = not visible)."""
    out: list[Obj | None] = []
    for i, o in enumerate(video.objects):
        cx, cy, visible = o.cx, o.cy, True
        for e in video.events:
            if e.obj != i:
                continue
            p = np.clip((t - e.start) / max(e.end - e.start, 1), 0.0, 1.0)
            if e.kind == "moves":
                dx, dy = DIRECTIONS[e.direction]
                dist = 0.22
                cx, cy = cx + dx * dist * p, cy + dy * dist * p
            elif e.kind == "appears":
                visible = t >= e.start + (e.end - e.start) // 2
            elif e.kind == "disappears":
                visible = t < e.start + (e.end - e.start) // 2
        if visible:
            out.append(Obj(o.shape, o.color, o.size, o.cell, float(np.clip(cx, 0.08, 0.92)),
                           float(np.clip(cy, 0.08, 0.92)), o.texture))
        else:
            out.append(None)
    return out


def render_video(video: VideoScene, size: int = 64) -> np.ndarray:
    """T×H×W×3 uint8 frames."""
    rng = _rng(video.seed, video.index, 98)
    bg = _background(video.background, size * 2, rng)
    frames = [render_objects([o for o in _state_at(video, t) if o is not None], video.background, size, rng,
                             background=bg) for t in range(video.n_frames)]
    return np.stack(frames)


# MLVP's main object (Algorithm 3) from the world's own knowledge: the caption's nouns name the objects of its
# events; each is "detected" exactly where it is visible; MLVP's rank score is 0.5·persistence + 0.3·box area /
# frame area + 0.2·detection confidence (1 here), and each frame's top-ranked visible object is occluded
MAIN_OBJECT_NOTE = ("the built-in world's main object: among the objects the caption names, the visible one of "
                    "highest MLVP rank score (0.5·persistence + 0.3·area + 0.2·confidence), its box from the "
                    "world's geometry per frame; None where none is visible")


def main_object_boxes(video: VideoScene, size: int = 64) -> list[list[int] | None]:
    """Frame t's main-object box ``[x_min, y_min, x_max, y_max]`` (integer pixels of a ``size``-px render, the
    shape's bounding square, clipped to the frame) or None when no object the caption names is visible."""
    named = list(dict.fromkeys(e.obj for e in video.events))  # caption order
    states = [_state_at(video, t) for t in range(video.n_frames)]
    seen = {i: sum(st[i] is not None for st in states) for i in named}
    score = {i: 0.5 * seen[i] / video.n_frames + 0.3 * SIZES[video.objects[i].size] ** 2 + 0.2 for i in named}
    ranked = sorted(named, key=lambda i: (-score[i], named.index(i)))
    out: list[list[int] | None] = []
    for st in states:
        o = next((st[i] for i in ranked if st[i] is not None), None)
        if o is None:
            out.append(None)
            continue
        x0, y0, x1, y1 = o.box(size)
        out.append([max(0, int(np.floor(x0))), max(0, int(np.floor(y0))), min(size, int(np.ceil(x1))),
                    min(size, int(np.ceil(y1)))])
    return out


# ---- galleries --------------------------------------------------------------------------------------
# Seeds of the built-in splits. Training uses TRAIN_SEED; evaluation galleries use other seeds.
TRAIN_SEED = 1
DEMO_SEED = 7
HELDOUT_SEED = 1000


def make_scenes(n: int, seed: int, start: int = 0) -> list[Scene]:
    return [sample_scene(seed, i) for i in range(start, start + n)]


def render_scenes(scenes: list[Scene], size: int = 128, progress=None) -> np.ndarray:
    out = np.empty((len(scenes), size, size, 3), np.uint8)
    for i, s in enumerate(scenes):
        out[i] = render_scene(s, size)
        if progress and (i % 50 == 0 or i == len(scenes) - 1):
            progress(i + 1, len(scenes))
    return out
