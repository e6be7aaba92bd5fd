import re

import numpy as np

from robustlab.datasets.synthetic import world


def test_scenes_are_deterministic_and_seed_dependent():
    a = world.sample_scene(3, 5)
    b = world.sample_scene(3, 5)
    c = world.sample_scene(4, 5)
    assert a.to_dict() == b.to_dict()
    assert a.to_dict() != c.to_dict()
    assert np.array_equal(world.render_scene(a), world.render_scene(b))


def test_scene_contents_and_caption_mentions_every_object():
    counts = set()
    for i in range(300):
        s = world.sample_scene(11, i)
        counts.add(len(s.objects))
        assert 1 <= len(s.objects) <= 4
        assert len({o.cell for o in s.objects}) == len(s.objects)  # one object per layout cell
        for o in s.objects:
            assert o.shape in world.SHAPES and o.color in world.COLORS and o.size in world.SIZES
            assert f"{o.color} {o.shape}" in s.caption
            assert world.POSITIONS[o.cell] in s.caption or o.position == "center"
        assert s.background in s.caption
        assert s.caption in s.captions and len(set(s.captions)) == len(world.TEMPLATES)
    assert counts == {1, 2, 3, 4}


def test_render_shapes_and_dtype():
    s = world.sample_scene(0, 1)
    for size in (32, 64, 128):
        im = world.render_scene(s, size)
        assert im.shape == (size, size, 3) and im.dtype == np.uint8
        assert im.std() > 5  # not a blank image


def test_referring_expression_is_unique_and_boxed():
    for i in range(200):
        s = world.sample_scene(5, i)
        for t in range(len(s.objects)):
            r = world.referring_expression(s, t, size=128)
            x0, y0, x1, y1 = r["box"]
            assert 0 <= x0 < x1 <= 128 and 0 <= y0 < y1 <= 128
            o = s.objects[t]
            assert o.shape in r["expression"]
            # the expression's attributes single out exactly one object
            same = [p for p in s.objects if all(getattr(p, a) == getattr(o, a) for a in r["attributes"])]
            assert len(same) == 1 or "position" in r["attributes"]


def test_box_covers_the_rendered_object():
    s = world.Scene(seed=0, index=0, background="black", caption="", objects=[
        world.Obj("square", "red", "large", (1, 1), 0.5, 0.5)])
    im = world.render_scene(s, 128).astype(int)
    x0, y0, x1, y1 = s.objects[0].box(128)
    red = (im[..., 0] > 150) & (im[..., 1] < 100)
    ys, xs = np.nonzero(red)
    assert xs.min() >= x0 - 2 and xs.max() <= x1 + 2 and ys.min() >= y0 - 2 and ys.max() <= y1 + 2


def test_videos_have_ordered_events_and_reversal_changes_caption():
    seen_kinds = set()
    for i in range(200):
        v = world.sample_video(2, i)
        assert 16 <= v.n_frames <= 32
        e0, e1 = v.events
        assert e0.end <= e1.start  # events happen in sequence
        assert " then " in v.caption
        assert v.reversed_caption != v.caption
        seen_kinds |= {e0.kind, e1.kind}
        # an object never acts after disappearing, nor before appearing
        assert not (e0.obj == e1.obj and (e0.kind == "disappears" or e1.kind == "appears"))
    assert seen_kinds == {"moves", "appears", "disappears"}


def test_video_frames_change_as_events_say():
    v = world.sample_video(2, 0)
    frames = world.render_video(v, 48)
    assert frames.shape == (v.n_frames, 48, 48, 3) and frames.dtype == np.uint8
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).sum() > 0
    again = world.render_video(world.sample_video(2, 0), 48)
    assert np.array_equal(frames, again)


def test_reversed_caption_is_caption_of_reversed_events():
    v = world.sample_video(9, 3)
    cap = world.video_caption(v.objects, v.events, reverse=True)
    assert cap == v.reversed_caption
    # reversing twice gives back the original ordering of phrases
    first = v.caption.split(", then ")
    rev = v.reversed_caption.split(", then ")
    assert len(first) == len(rev) == 2


def _fits(objs, phrase):
    """How many objects a PEELING-style phrase ("small red circle at the top left") describes."""
    from robustlab.datasets.synthetic.world import POSITIONS

    words = phrase.split(" ")
    pos = next((p for p in sorted(POSITIONS.values(), key=len, reverse=True) if phrase.endswith(" " + p)), None)
    if pos:
        words = phrase[: -len(pos)].split(" ")[:-3]  # drop "at the " / "in the "
    n = 0
    for o in objs:
        ok = all(w in (o.size, o.texture, o.color, o.shape) for w in words if w)
        n += ok and (pos is None or o.position == pos)
    return n


def test_peeling_questions_answer_from_the_scene():
    import numpy as np

    from robustlab.datasets.synthetic import qa

    rng = np.random.default_rng(3)
    seen = set()
    for s in world.make_scenes(150, 11):
        for t in qa.PEELING_TYPES:
            q = qa.image_question(s, rng, t)
            assert q.qtype == t and q.answer in qa.ALL_ANSWERS  # '0' is only in the uniqueness answers
            pre, post = {"count_of": ("how many ", " are in the image?"), "many": ("are there many ", " in the image?"),
                         "reflected": ("is there a reflected ", " in the image?")}[t]
            assert q.question.startswith(pre) and q.question.endswith(post), q
            x = q.question[len(pre):-len(post)]
            if t != "reflected":  # counted: the head noun in the plural ("how many red rings are in the image?")
                assert re.search(r"\b(?:" + "|".join(world.SHAPES) + r")s\b", x), q
                x = re.sub(r"\b(" + "|".join(world.SHAPES) + r")s\b", r"\1", x)
            n = _fits(s.objects, x)
            if t == "count_of":
                assert q.answer == str(n), (q, n)
                seen.add(n)
            elif t == "many":
                assert q.answer == ("yes" if n >= 2 else "no"), (q, n)
            else:
                assert q.answer == "no"  # the world has no reflections
            assert (q.target >= 0) == (n == 1)
    assert {0, 1, 2} <= seen  # near misses (0) and repeated objects (2+) occur


def test_questions_agree_in_number_and_article():
    """Issue 45: "how many ring in the image?" and "is there a orange star?" are gone from every template."""
    import numpy as np

    from robustlab.datasets.synthetic import qa

    rng = np.random.default_rng(5)
    seen = set()
    for s in world.make_scenes(120, 13):
        for t in qa.IMAGE_TYPES + qa.PEELING_TYPES:
            q = qa.image_question(s, rng, t).question
            seen.add(q)
            assert not re.search(r"\ba [aeiou]", q) and not re.search(r"\ban [^aeiou ]", q), q
    for v in (world.sample_video(13, i) for i in range(60)):
        for t in qa.VIDEO_TYPES + qa.CLAVI_TYPES:
            q = qa.video_question(v, rng, t).question
            assert not re.search(r"\ba [aeiou]", q), q
    assert any(q.startswith("is there an orange ") for q in seen)
    assert any(re.match(r"how many (\w+ )*(circle|square|triangle|diamond|star|ring)s( at the [a-z ]+)? are in "
                        r"the image\?$", q) for q in seen)
    assert not any(re.match(r"(how|are there) many (\w+ )*(circle|square|triangle|diamond|star|ring)\b(?!s)", q)
                   for q in seen)


def test_plural_phrase():
    from robustlab.datasets.synthetic.qa import article, plural_phrase

    assert [plural_phrase(x) for x in ("ring", "small striped red ring", "circle at the top left", "man in a car",
                                       "person", "glass", "bus", "woman wearing a hat", "sky", "boy", "Box",
                                       "tall building", "building on the left")] == [
        "rings", "small striped red rings", "circles at the top left", "men in a car", "people", "glasses",
        "buses", "women wearing a hat", "skies", "boys", "Boxes", "tall buildings", "buildings on the left"]
    assert [article(w) for w in ("orange", "red", "Umbrella")] == ["an", "a", "an"]


def test_overspecified_expressions_add_redundant_attributes():
    import numpy as np

    rng = np.random.default_rng(0)
    extra = 0
    for s in world.make_scenes(100, 12):
        for k in range(len(s.objects)):
            r = world.overspecified_expression(s, k, rng)
            assert set(r["minimal"]) <= set(r["attributes"]) and "shape" in r["attributes"]
            assert r["box"] == world.referring_expression(s, k)["box"]
            t = s.objects[k]
            assert sum(all(getattr(o, a) == getattr(t, a) for a in r["attributes"]) for o in s.objects) == 1
            extra += len(r["attributes"]) > len(set(r["minimal"]) | {"shape"})
            assert r["expression"].startswith("the ") and t.shape in r["expression"]
    assert extra > 150  # nearly always at least one redundant attribute


def test_clavi_training_questions():
    import numpy as np

    from robustlab.datasets.synthetic import qa

    rng = np.random.default_rng(1)
    for i in range(60):
        v = world.sample_video(13, i)
        e1, e2 = v.events
        q = qa.video_question(v, rng, "be")
        if q.qtype == "be":
            first = q.question.endswith("at the beginning?")
            named = [e for e in (e1, e2) if q.question.startswith(f"does {qa._name(v.objects[e.obj])} {qa._verb(e)} ")]
            assert named and q.answer == ("yes" if (named[0] is e1) == first else "no")
            flip = qa.relation_flip(v, q)
            assert flip.answer != q.answer and ("beginning" in flip.question) != first
        for t in ("event_nc", "order_nc"):
            q = qa.video_question(v, rng, t)
            assert q.answer == "no"
            names = {qa._name(o) for o in v.objects}
            assert sum(n in q.question for n in names) == (0 if t == "event_nc" else 1)


def test_the_fast_background_is_the_reference_formula_bit_for_bit():
    """render_objects draws on ``_background_u8`` (a channel at a time, in place: the built-in gallery renders 300
    of them before the first page can rank); it must give exactly the uint8 image of the original formula, and
    ``_background`` (the training recipes' float background) exactly that formula's floats, with the same draws."""
    def reference(bg, size, rng):
        base = np.array(world.BACKGROUNDS[bg], np.float32)
        yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / max(size - 1, 1)
        ang = rng.uniform(0, 2 * np.pi)
        grad = (np.cos(ang) * (xx - 0.5) + np.sin(ang) * (yy - 0.5)) * rng.uniform(20, 45)
        return np.clip(base[None, None, :] + grad[..., None], 0, 255)

    for seed in range(12):
        for bg in world.BACKGROUNDS:
            for size in (1, 2, 96, 128, 256):
                ref = reference(bg, size, np.random.default_rng(seed))
                r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
                fast = world._background_u8(bg, size, r1)
                assert fast.dtype == np.uint8 and np.array_equal(fast, ref.astype(np.uint8))
                flt = world._background(bg, size, r2)
                assert flt.dtype == ref.dtype and np.array_equal(flt, ref)
                assert r1.random() == r2.random()  # the same number of draws
