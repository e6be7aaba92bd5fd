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
