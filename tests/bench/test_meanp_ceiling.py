"""benchmarks/bench_meanp_ceiling.py: the ground truth it trains on is the world's own, and a tiny run completes.

The measurement itself (20,000 videos, 40 epochs, about half an hour on 2 cores) is the benchmark's; its result is
benchmarks/results/meanp_ceiling.json, in docs/model-history.md; with --camera (the held-out ground truth seen
through the camera perturbations) benchmarks/results/meanp_ceiling_camera.json."""
import importlib.util
from pathlib import Path

import numpy as np

from robustlab.datasets.synthetic import world
from robustlab.training.tiny_clip_video import sampled_frame_indices

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_meanp_ceiling", ROOT / "benchmarks" / "bench_meanp_ceiling.py")
B = importlib.util.module_from_spec(spec)
spec.loader.exec_module(B)


def test_the_ground_truth_is_the_worlds_state_at_the_sampled_frames():
    x, c, caps = B.ground_truth(world.TRAIN_SEED, 40)
    assert x.shape == (40, 8, B.FRAME_DIM) and c.shape == (40, 2 * B.EVENT_DIM) and len(caps) == 40
    for i in range(40):
        v = world.sample_video(world.TRAIN_SEED, i)
        assert caps[i] == v.caption
        for k, t in enumerate(sampled_frame_indices(v.n_frames, 8)):
            visible = [o for o in world._state_at(v, int(t)) if o is not None]
            assert x[i, k, 0:B.FRAME_DIM - 4:B.SLOT].sum() == len(visible)  # one visibility flag per object
            for o in visible:  # the soft position peaks at the object's bin
                s = (B.COLORS.index(o.color) * len(B.SHAPES) + B.SHAPES.index(o.shape)) * B.SLOT
                for row, at in ((x[i, k, s + 1:s + 1 + B.BINS], o.cx), (x[i, k, s + 1 + B.BINS:s + B.SLOT], o.cy)):
                    assert np.isclose(row[np.argmin(np.abs(B.CENTRES - at))], row.max())
        assert c[i].sum() == sum(3 + bool(e.direction) for e in v.events)  # colour, shape, kind (, direction)
    # the structure is the caption's: equal captions, equal rows; different captions, different rows
    rows = {tuple(r) for r in c.numpy()}
    assert len(rows) == len(set(caps))


def test_a_tiny_run_reports_r1_on_every_split():
    tr = B.ground_truth(world.TRAIN_SEED, 64)
    data = dict(train=tr, fit=tr, validation=B.ground_truth(2, 32), heldout=B.ground_truth(world.HELDOUT_SEED, 32))
    for head in ("meanp", "ordered"):
        r = B.fit(head, data, epochs=1, hidden=16, depth=2, embed_dim=8, lr=1e-3, batch=32, log=lambda *a: None)
        assert r["final"]["epoch"] == 1 and all(0 <= r["final"][s] <= 1 for s in ("fit", "validation", "heldout"))


def test_camera_shifts_move_the_ground_truth_as_the_pixels_move():
    rng = np.random.default_rng(0)
    turn = B.camera_moves("static_rotate", 90.0, 8, rng)
    assert all(np.allclose(m(0.5, 0.5), (0.5, 0.5)) for m in turn)  # the centre stays
    assert np.allclose(turn[0](1.0, 0.5), (0.5, 0.0))  # PIL's rotate: counter-clockwise, the right edge goes up
    shake = B.camera_moves("translate", 7, 8, rng)
    for m in shake:  # enlarged ×256/224, then a window offset by 0…7 px of 224 (content moves up-left)
        x, y = m(0.5, 0.5)
        assert 0.5 * 256 / 224 - 7 / 224 <= x <= 0.5 * 256 / 224 and 0.5 * 256 / 224 - 7 / 224 <= y <= 0.5 * 256 / 224
    assert len({m(0.5, 0.5) for m in shake}) > 1  # redrawn per frame
    x0, c0, caps0 = B.ground_truth(world.HELDOUT_SEED, 40)
    for k in B.CAMERA:
        x, c, caps = B.ground_truth(world.HELDOUT_SEED, 40, camera=k)
        assert caps == caps0 and np.array_equal(c, c0) and not np.array_equal(x, x0)  # the captions stay
        assert np.array_equal(x, B.ground_truth(world.HELDOUT_SEED, 40, camera=k)[0])  # one fixed draw per video


def test_the_camera_splits_are_scored_after_training():
    tr = B.ground_truth(world.TRAIN_SEED, 64)
    ho = B.ground_truth(world.HELDOUT_SEED, 32)
    shifted = {f"heldout {k}": B.ground_truth(world.HELDOUT_SEED, 32, camera=k) for k in ("rotate/1", "translate/3")}
    data = dict(train=tr, fit=tr, validation=ho, heldout=ho, **shifted)
    r = B.fit("meanp", data, epochs=1, hidden=16, depth=2, embed_dim=8, lr=1e-3, batch=32, log=lambda *a: None)
    assert set(r["camera"]) == {"rotate/1", "translate/3"} and all(0 <= v <= 1 for v in r["camera"].values())
