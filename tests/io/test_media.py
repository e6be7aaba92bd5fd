"""Tests for robustlab.io.media: PyAV decoding/encoding, sampling, bad input, codec round trips."""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys

import numpy as np
import pytest

av = pytest.importorskip("av")

from robustlab.io import media  # noqa: E402
from robustlab.io.files import InputError  # noqa: E402


def smooth_video(t=16, h=48, w=64, speed=2) -> np.ndarray:
    """Smooth moving gradients and a moving disc: compresses well, so round-trip PSNR is meaningful."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    frames = []
    for i in range(t):
        img = np.stack([120 + 80 * np.sin((xx + speed * i) / 6), 120 + 70 * np.cos(yy / 5 + i / 4),
                        100 + 60 * np.sin((xx + yy) / 9)], -1)
        img[(xx - 10 - 2 * i) ** 2 + (yy - h / 2) ** 2 < (min(h, w) / 6) ** 2] = [220, 40, 40]
        frames.append(img)
    return np.clip(np.stack(frames), 0, 255).astype(np.uint8)


def index_video(t=20, h=16, w=24) -> np.ndarray:
    """Frame i is filled with the value 10·i (distinct after lossy coding)."""
    return np.repeat((np.arange(t, dtype=np.uint8) * 10)[:, None, None, None], h * w * 3).reshape(t, h, w, 3)


def psnr(a, b) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


@pytest.fixture(scope="module")
def clip():
    return smooth_video()


@pytest.fixture(scope="module")
def clip_mp4(clip):
    return media.write_mp4(clip, fps=8.0)


# ------------------------------------------------------------------------------------------------ writing

def test_write_mp4_is_h264_faststart_and_deterministic(clip, clip_mp4):
    assert clip_mp4[4:8] == b"ftyp"
    assert 0 < clip_mp4.find(b"moov") < clip_mp4.find(b"mdat")  # +faststart: the index comes first
    assert media.write_mp4(clip, fps=8.0) == clip_mp4
    with av.open(io.BytesIO(clip_mp4)) as c:
        s = c.streams.video[0]
        assert s.codec_context.name == "h264" and s.codec_context.pix_fmt == "yuv420p"
        assert (s.codec_context.width, s.codec_context.height) == (64, 48) and float(s.average_rate) == 8.0


_CODEC_RUNS = (("mpeg2video", {"qscale": 20}), ("mpeg4", {"qscale": 15}), ("libx264", {"bitrate": 50_000}))


def _codec_digests(clip) -> list[str]:
    return [hashlib.sha256(media.encode_decode(clip, c, **kw).tobytes()).hexdigest() for c, kw in _CODEC_RUNS]


def test_same_bytes_in_another_process(clip, clip_mp4):
    """write_mp4 bytes and codec round trips are reproducible across processes (x264 one thread, SSE2 only)."""
    code = ("import hashlib, json, sys; sys.path.insert(0, '.'); "
            "from tests.io.test_media import smooth_video, _codec_digests; from robustlab.io.media import write_mp4; "
            "print(json.dumps([hashlib.sha256(write_mp4(smooth_video(), fps=8.0)).hexdigest()] "
            "+ _codec_digests(smooth_video())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    assert theirs == [hashlib.sha256(clip_mp4).hexdigest()] + _codec_digests(clip)


@pytest.mark.parametrize("shape", [(16, 48, 64), (5, 47, 63), (3, 7, 9), (1, 48, 64), (1, 1, 1), (1, 3, 5), (2, 2, 2)])
def test_write_read_round_trip_sizes(shape):
    t, h, w = shape
    frames = smooth_video(t, h, w) if min(h, w) >= 8 else \
        np.random.default_rng(0).integers(60, 200, (t, h, w, 3), dtype=np.uint8)
    v = media.read_video(media.write_mp4(frames, fps=10))
    eh, ew = h + h % 2, w + w % 2  # odd sizes are padded to even by repeating the last row/column
    assert v.frames.shape == (t, eh, ew, 3) and v.frames.dtype == np.uint8
    assert v.n_frames_total == t and v.codec == "h264" and v.original_size == (eh, ew)
    assert v.fps == pytest.approx(10.0) and list(v.indices) == list(range(t))
    if min(h, w) >= 8:
        assert psnr(v.frames[:, :h, :w], frames) > 28  # crf 18; 4:2:0 chroma limits this colourful pattern
        if h % 2:  # the padding row repeats the last real row (up to coding error)
            assert np.abs(v.frames[:, -1].astype(int) - v.frames[:, -2].astype(int)).mean() < 4


def test_pad_even_repeats_edges():
    x = np.arange(3 * 5 * 3, dtype=np.uint8).reshape(1, 3, 5, 3)
    p = media.pad_even(x)
    assert p.shape == (1, 4, 6, 3)
    assert np.array_equal(p[:, :3, :5], x)
    assert np.array_equal(p[:, 3, :5], x[:, 2]) and np.array_equal(p[:, :3, 5], x[:, :, 4])


def test_colour_conversion_round_trip():
    gray = np.repeat(np.arange(0, 256, 5, dtype=np.uint8)[:, None], 4, 1)
    x = np.stack([gray] * 3, -1)[None, :50, :4]  # 1×50×4×3 neutral grays
    back = media.yuv420_to_rgb(media.rgb_to_yuv420(x), 50, 4)
    assert np.abs(back.astype(int) - x.astype(int)).max() <= 2
    rgb = smooth_video(2, 32, 32)
    assert psnr(media.yuv420_to_rgb(media.rgb_to_yuv420(rgb), 32, 32), rgb) > 30


@pytest.mark.parametrize("ext,codec", [(".webm", "vp9"), (".avi", "mpeg4"), (".mov", "h264"), (".mkv", "h264"),
                                       (".mpg", "mpeg2video")])
def test_read_other_containers(tmp_path, clip, ext, codec):
    frames = clip[:, :47, :63]  # odd size on purpose
    path = media.write_video(frames, tmp_path / f"clip{ext}", fps=12)
    for src in (path, str(path), path.read_bytes()):
        v = media.read_video(src)
        assert v.codec == codec and v.frames.shape == (16, 48, 64, 3) and v.n_frames_total == 16
        assert psnr(v.frames[:, :47, :63], frames) > 28
        assert v.fps == pytest.approx(12.0, rel=1e-3)


def test_display_rotation_is_applied():
    """Phone videos store landscape frames plus a display matrix; PyAV's rotation is counter-clockwise."""
    frame = np.zeros((16, 32, 3), np.uint8)
    frame[:8, :8] = 255  # a white block in the top-left corner
    for deg, k in ((90, 1), (-90, 3), (180, 2)):
        buf = io.BytesIO()
        with av.open(buf, "w", format="mp4") as c:
            s = c.add_stream("mpeg4", rate=8)
            s.width, s.height, s.pix_fmt = 32, 16, "yuv420p"
            s.options = {"qmin": "2", "qmax": "2"}
            s.set_display_rotation(deg)
            for p in list(s.encode(av.VideoFrame.from_ndarray(frame, format="rgb24"))) + list(s.encode(None)):
                c.mux(p)
        v = media.read_video(buf.getvalue())
        want = np.rot90(frame, k)
        assert v.frames.shape[1:] == want.shape and v.rotation == deg % 360 and v.original_size == (16, 32)
        assert np.abs(v.frames[0].astype(int) - want.astype(int)).mean() < 8


# ------------------------------------------------------------------------------------------------ sampling

def test_uniform_sampling_picks_the_papers_indices(tmp_path):
    vid = index_video(20)
    data = media.write_mp4(vid, fps=20)
    for n in (12, 5, 1, 20, 33):
        v = media.read_video(data, num_frames=n)
        want = np.linspace(0, 19, n).round().astype(int)
        assert list(v.indices) == list(want) and v.frames.shape[0] == n
        got = np.rint(v.frames.reshape(n, -1).mean(1) / 10).astype(int)  # recover each frame's index
        assert list(got) == list(want)
        assert v.fps == pytest.approx(n / 1.0)  # 20 frames at 20 fps = 1 s
    v = media.read_video(data, max_frames=4)
    assert list(v.indices) == [0, 6, 13, 19] and v.n_frames_total == 20
    v = media.read_video(data, max_side=12)
    assert v.frames.shape == (20, 8, 12, 3) and v.original_size == (16, 24)
    with pytest.raises(ValueError, match="num_frames"):
        media.read_video(data, num_frames=0)
    with pytest.raises(ValueError, match="over max_frames"):
        media.read_video(data, num_frames=700)
    assert list(media.sample_indices(8, 12)) == list(np.linspace(0, 7, 12).round().astype(int))


# ------------------------------------------------------------------------------------------------ bad input

def _wav() -> bytes:
    buf = io.BytesIO()
    with av.open(buf, "w", format="wav") as c:
        s = c.add_stream("pcm_s16le", rate=8000)
        f = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        f.sample_rate = 8000
        for p in list(s.encode(f)) + list(s.encode(None)):
            c.mux(p)
    return buf.getvalue()


def _video_stream_without_frames() -> bytes:
    buf = io.BytesIO()
    with av.open(buf, "w", format="matroska") as c:
        v = c.add_stream("mpeg4", rate=8)
        v.width, v.height, v.pix_fmt = 16, 16, "yuv420p"
        a = c.add_stream("pcm_s16le", rate=8000)
        f = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        f.sample_rate = 8000
        for p in list(a.encode(f)) + list(a.encode(None)):
            c.mux(p)
    return buf.getvalue()


def test_bad_inputs_get_one_line_input_errors(tmp_path, clip_mp4, monkeypatch):
    from PIL import Image

    png = io.BytesIO()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(png, "PNG")
    corrupt = bytearray(clip_mp4)
    for i in range(2000, len(corrupt), 7):
        corrupt[i] ^= 0x55
    cases = {
        "notes.txt": (b"this is not a video at all " * 20, "not a video"),
        "still.png": (png.getvalue(), "still image"),
        "half.mp4": (clip_mp4[: len(clip_mp4) // 2], "corrupt"),
        "garbled.mp4": (bytes(corrupt), "corrupt"),
        "sound.wav": (_wav(), "no video stream"),
        "empty_stream.mkv": (_video_stream_without_frames(), "no frames"),
        "empty.mp4": (b"", "empty"),
    }
    for name, (data, words) in cases.items():
        with pytest.raises(InputError) as e:
            media.read_video(data, name=name)
        msg = str(e.value)
        assert words in msg and name in msg and "\n" not in msg, (name, msg)
        assert isinstance(e.value, ValueError)
    with pytest.raises(InputError, match="cannot read the file"):
        media.read_video(tmp_path / "missing.mp4")
    monkeypatch.setattr(media, "MAX_IMAGE_PIXELS", 1000)
    with pytest.raises(InputError, match="64×48 pixels per frame is over"):
        media.read_video(clip_mp4, name="big.mp4")
    monkeypatch.setattr(media, "MAX_IMAGE_PIXELS", 40_000_000)
    monkeypatch.setattr(media, "MAX_DECODED_BYTES", 10_000)
    with pytest.raises(InputError, match="pass max_side or num_frames"):
        media.read_video(clip_mp4)
    assert media.read_video(clip_mp4, num_frames=1).frames.shape == (1, 48, 64, 3)
    monkeypatch.setattr(media, "MAX_UPLOAD_BYTES", 100)
    with pytest.raises(InputError, match="over the 0 MB limit"):
        media.read_video(clip_mp4, name="huge.mp4")
    p = tmp_path / "huge.mp4"
    p.write_bytes(clip_mp4)
    with pytest.raises(InputError, match="over the 0 MB limit"):
        media.read_video(p)


def test_write_rejects_bad_frames():
    for bad in (np.zeros((4, 4, 3), np.uint8), np.zeros((2, 4, 4, 3), np.float32), np.zeros((0, 4, 4, 3), np.uint8),
                np.zeros((2, 4, 4, 4), np.uint8)):
        with pytest.raises(ValueError, match="T×H×W×3 uint8"):
            media.write_mp4(bad)
    with pytest.raises(ValueError, match="fps"):
        media.write_mp4(np.zeros((1, 4, 4, 3), np.uint8), fps=0)


# ------------------------------------------------------------------------------------------ encode / decode

def test_encode_decode_codecs_deterministic_and_shape_preserving(clip):
    odd = clip[:6, :47, :63]
    for codec, kw in [("mpeg2video", {"qscale": 20}), ("mpeg1video", {"qscale": 20}), ("mpeg4", {"qscale": 15}),
                      ("libx264", {"bitrate": 100_000}), ("mpeg4", {"bitrate": 100_000})]:
        a = media.encode_decode(clip, codec, **kw)
        assert a.shape == clip.shape and a.dtype == np.uint8
        assert np.array_equal(a, media.encode_decode(clip, codec, **kw)), codec
        assert 18 < psnr(a, clip) < 60, (codec, psnr(a, clip))
        assert media.encode_decode(odd, codec, **kw).shape == odd.shape
    for tiny in ((1, 1, 1), (1, 3, 5), (2, 2, 2)):
        x = np.full(tiny + (3,), 128, np.uint8)
        for codec, kw in [("mpeg2video", {"qscale": 31}), ("mpeg4", {"qscale": 31}), ("libx264", {"bitrate": 25_000})]:
            assert media.encode_decode(x, codec, **kw).shape == x.shape
    with pytest.raises(ValueError, match="unknown codec"):
        media.encode_decode(clip, "h265", bitrate=1000)
    with pytest.raises(ValueError, match="exactly one"):
        media.encode_decode(clip, "mpeg4")
    with pytest.raises(ValueError, match="qscale applies"):
        media.encode_decode(clip, "libx264", qscale=10)


def test_qscale_saturates_at_31_and_bitrate_ladder_is_monotone(clip):
    """ffmpeg -q:v above 31 quantises like 31 for the MPEG encoders (measured here: bit-identical output)."""
    assert [media.effective_qscale(q) for q in (1, 15, 20, 30, 31, 40, 100)] == [2, 15, 20, 30, 31, 31, 31]
    q = {v: media.encode_decode(clip, "mpeg2video", qscale=v) for v in (20, 31, 40, 100)}
    assert np.array_equal(q[31], q[40]) and np.array_equal(q[40], q[100])
    assert psnr(q[20], clip) > psnr(q[31], clip) + 1
    ladder = [psnr(media.encode_decode(clip, "libx264", bitrate=b, preset="fast"), clip)
              for b in (500_000, 250_000, 100_000, 50_000, 25_000)]
    assert all(a > b for a, b in zip(ladder, ladder[1:])), ladder


def test_box_labels_never_cover_each_other():
    """Issue 45: a perturbed box at the ground truth's corner drew "perturbed" over "truth". Now no label covers
    another, whether the boxes share a corner, are identical, or sit at the image's edge."""
    from itertools import combinations

    from robustlab.io.draw import draw_boxes, label_rects

    def overlap(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    for boxes in ([((60, 60, 240, 240), "truth"), ((60, 60, 252, 264), "perturbed"), ((60, 66, 240, 240), "clean")],
                  [((0, 0, 100, 100), "truth"), ((0, 0, 100, 100), "perturbed"), ((0, 0, 100, 100), "clean")],
                  [((300, 370, 384, 384), "truth"), ((290, 360, 384, 384), "perturbed")]):
        rects = label_rects(boxes, (384, 384))
        assert all(r is not None for r in rects)
        assert not any(overlap(a, b) for a, b in combinations(rects, 2)), rects
    import numpy as np

    im = draw_boxes(np.zeros((64, 64, 3), np.uint8), [((10, 10, 40, 40), (0, 160, 0), "truth"),
                                                      ((10, 10, 42, 44), (200, 0, 0), "perturbed")])
    assert im.size == (384, 384)
