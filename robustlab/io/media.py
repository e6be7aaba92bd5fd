"""Video I/O with PyAV (FFmpeg's libraries bundled in the ``av`` wheel; no OpenCV video I/O, no ffmpeg binary).

- ``read_video(src, num_frames=None, max_frames=600, max_side=None) -> Video``: decode mp4, webm, avi, mov, mkv
  (and animated GIF) from bytes or a path. ``num_frames`` samples uniformly as the papers do
  (``np.linspace(0, T-1, num_frames).round()``, repeating frames when the video is shorter); without it every
  frame is kept, or ``max_frames`` uniformly sampled frames when the video is longer. ``max_side`` downscales
  (aspect kept, FFmpeg's area filter). Frames come back as T×H×W×3 uint8 RGB, turned upright when the container
  carries a display rotation (phone videos; multiples of 90°). Every failure is a
  ``robustlab.io.files.InputError`` with a one-line message.
- ``write_mp4(frames, fps=8.0) -> bytes``: H.264 (libx264) yuv420p in an mp4 with ``+faststart`` (the moov atom
  first), which Chromium plays in ``st.video`` (OpenCV's ``mp4v`` shows a black box there). Odd sizes are padded
  to even by **repeating the last row/column** (edge pixels, never cropped). The output bytes are deterministic
  for the same input (see "Determinism").
- ``write_video(frames, path, fps, codec=None)``: the same for .mp4/.mov/.mkv (H.264), .webm (VP9), .avi
  (MPEG-4 Part 2).
- ``encode_decode(frames, codec, ...)``: an in-memory encode → decode round trip through a real encoder
  (``mpeg1video``, ``mpeg2video``, ``mpeg4``, ``libx264``), with a fixed quantiser (``qscale``, like
  ``ffmpeg -q:v``) or a target ``bitrate``: the codec perturbations of [P1] and MLVP.

Colour: robustlab converts RGB ↔ YUV 4:2:0 itself (BT.601 limited range, exact integer arithmetic, 2×2-averaged
chroma on the way in, nearest chroma on the way out like FFmpeg's unscaled converter), so the YUV planes fed to
the encoders do not depend on the CPU's SIMD level. Streams are tagged BT.601 (smpte170m).

Determinism (measured with av 18.1 / libavcodec 62 / the bundled x264 on x86-64): x264's AVX-512 kernels in
this build give *different bytes run to run* even with one thread, so libx264 always runs with one thread and
its SIMD pinned to SSE2 (``asm=SSE2``, present on every x86-64 CPU; plain C elsewhere). With that,
``write_mp4`` and ``encode_decode`` return identical bytes/frames for identical input, in one process and across
processes. The MPEG-1/2/4 encoders run with ``flags=+bitexact``, the integer FDCT and the simple IDCT. Other
architectures (e.g. aarch64, plain-C x264) produce different, but again deterministic, bytes.
"""
from __future__ import annotations

import dataclasses
import fractions
import io
import os
import platform
import re
import tempfile
from pathlib import Path

import numpy as np

from robustlab.io.confined import shown_path, visible
from robustlab.io.files import MAX_IMAGE_PIXELS, MAX_UPLOAD_BYTES, InputError, cannot_read, read_file_capped

MAX_VIDEO_FRAMES = 600
MAX_DECODED_BYTES = 1536 * 2**20  # frames kept in memory after decoding (1.5 GiB)
CODECS = ("mpeg1video", "mpeg2video", "mpeg4", "libx264")
QSCALE_MIN, QSCALE_MAX = 2, 31  # FFmpeg's default qmin / qmax for the MPEG-1/2/4 encoders
_DECODER = {"libx264": "h264"}
_IMAGE_FORMATS = {"image2", "image2pipe", "png_pipe", "jpeg_pipe", "jpegls_pipe", "bmp_pipe", "webp_pipe",
                  "tiff_pipe", "gif_pipe", "ppm_pipe", "pgm_pipe", "pgmyuv_pipe", "pam_pipe", "qoi_pipe",
                  "dpx_pipe", "exr_pipe", "j2k_pipe", "psd_pipe", "svg_pipe", "xpm_pipe", "pcx_pipe",
                  "sgi_pipe", "sunrast_pipe", "photocd_pipe", "hdr_pipe", "pbm_pipe", "pfm_pipe", "phm_pipe",
                  "dds_pipe", "jpegxl_pipe", "xbm_pipe", "xwd_pipe", "cri_pipe", "gem_pipe", "pictor_pipe",
                  "qdraw_pipe", "vbn_pipe"}


@dataclasses.dataclass(eq=False)
class Video:
    """Decoded frames plus what the source said about itself.

    ``fps`` is the frame rate of ``frames`` (the source's rate, scaled down when frames were sampled, so
    ``write_mp4(v.frames, v.fps)`` keeps the duration); ``indices`` are the source frame numbers kept.
    """

    frames: np.ndarray  # T×H×W×3 uint8 RGB
    fps: float
    source_fps: float
    codec: str
    container: str
    original_size: tuple[int, int]  # (height, width) of the coded stream, before max_side
    duration: float | None  # seconds, None when unknown
    n_frames_total: int  # frames the decoder produced for the whole file
    indices: np.ndarray  # source frame index of every kept frame
    name: str = ""
    rotation: int = 0  # display rotation applied (counter-clockwise degrees, from the container's display matrix)

    @property
    def n_frames(self) -> int:
        return int(self.frames.shape[0])

    @property
    def size(self) -> tuple[int, int]:
        """(height, width) of ``frames``."""
        return int(self.frames.shape[1]), int(self.frames.shape[2])

    def info(self) -> dict:
        """JSON-serialisable description (no frames)."""
        return {"name": self.name, "codec": self.codec, "container": self.container,
                "original_size": list(self.original_size), "size": list(self.size), "fps": self.fps,
                "source_fps": self.source_fps, "duration": self.duration, "n_frames": self.n_frames,
                "n_frames_total": self.n_frames_total, "rotation": self.rotation}


# ------------------------------------------------------------------------------------------------ reading

def sample_indices(total: int, num_frames: int) -> np.ndarray:
    """Uniform sampling of the papers: ``np.linspace(0, total-1, num_frames).round()`` as int64."""
    if total < 1 or num_frames < 1:
        raise ValueError(f"need total >= 1 and num_frames >= 1, got {total}, {num_frames}")
    return np.linspace(0, total - 1, num_frames).round().astype(np.int64)


def _read_source(src, name: str) -> tuple[bytes, str]:
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
        label = name or "upload"
    elif isinstance(src, (str, Path, os.PathLike)):
        label = name or shown_path(src)  # never a full server path under the dashboard's data roots
        try:
            if not visible(src):  # the dashboard's data roots: outside them is the same as missing
                raise FileNotFoundError(2, "No such file or directory")
            size = os.path.getsize(src)
        except (OSError, ValueError) as e:
            raise cannot_read(label, e) from e
        if size > MAX_UPLOAD_BYTES:
            raise InputError(f"{label}: {size / 1e6:.0f} MB is over the {MAX_UPLOAD_BYTES // 2**20} MB limit")
        # the checked descriptor is what is read (robustlab.io.files.open_fd), at most the limit
        data = read_file_capped(src, MAX_UPLOAD_BYTES, label)
    else:
        raise InputError(f"{name or 'input'}: expected video bytes or a path, got {type(src).__name__}")
    if not data:
        raise InputError(f"{label}: the file is empty")
    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(f"{label}: {len(data) / 1e6:.0f} MB is over the {MAX_UPLOAD_BYTES // 2**20} MB limit")
    return data, label


def _short(e: Exception) -> str:
    """A decoder's message in one short line. PyAV's (an OSError-like ``[Errno n] what: '<file>'``) is its ``strerror``
    only: the file it names is the in-memory stream (``'<none>'``), and the message's label names the real one."""
    msg = getattr(e, "strerror", None) if getattr(e, "filename", None) is not None else None
    msg = " ".join(str(msg or e).split())
    msg = re.sub(r"<[\w.]+ object at 0x[0-9a-fA-F]+>", "the file", msg)
    return (msg[:160] + "…") if len(msg) > 160 else msg


def _open(data: bytes, label: str):
    import av

    try:
        return av.open(io.BytesIO(data), mode="r")
    except av.error.FFmpegError as e:
        raise InputError(f"{label}: not a video robustlab can read (corrupt, truncated or not a video file: "
                         f"{_short(e)})") from e
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{label}: not a video robustlab can read ({_short(e)})") from e


def _target_size(h: int, w: int, max_side: int | None) -> tuple[int, int]:
    if not max_side or max(h, w) <= max_side:
        return h, w
    s = max_side / max(h, w)
    return max(1, int(round(h * s))), max(1, int(round(w * s)))


def _decode(data: bytes, label: str, keep: np.ndarray | None, size: tuple[int, int] | None):
    """Decode the first video stream; return (dict index -> frame for indices in ``keep``, decoded count).

    ``keep=None`` keeps nothing (count only). Frames are converted to RGB at ``size`` (h, w).
    """
    import av

    wanted = {} if keep is None else {int(i): [] for i in keep}
    got: dict[int, np.ndarray] = {}
    n = 0
    rotation = 0
    with _open(data, label) as c:
        stream = c.streams.video[0]
        stream.thread_type = "AUTO"  # frame/slice threads: same pixels, faster
        try:
            for frame in c.decode(stream):
                if n in wanted:
                    got[n] = _to_rgb(frame, size)
                    rotation = int(round(getattr(frame, "rotation", 0) or 0)) % 360
                n += 1
        except av.error.FFmpegError as e:
            if n == 0:
                raise InputError(f"{label}: the video stream cannot be decoded (corrupt or unsupported: "
                                 f"{_short(e)})") from e
            raise InputError(f"{label}: the video is corrupt or truncated (decoding failed after {n} frames: "
                             f"{_short(e)})") from e
    return got, n, rotation


def _to_rgb(frame, size: tuple[int, int] | None) -> np.ndarray:
    """RGB at ``size`` (coded orientation), then turned upright per the stream's display matrix (phone videos):
    PyAV's ``frame.rotation`` is the counter-clockwise rotation to apply for display (multiples of 90° only)."""
    h, w = size if size else (frame.height, frame.width)
    rot = int(round(getattr(frame, "rotation", 0) or 0))
    if (h, w) != (frame.height, frame.width):
        arr = frame.reformat(width=w, height=h, format="rgb24", interpolation="AREA").to_ndarray()
    else:
        arr = frame.to_ndarray(format="rgb24")
    if rot % 90 == 0 and rot % 360:
        arr = np.ascontiguousarray(np.rot90(arr, k=(rot // 90) % 4))
    return arr


def read_video(src: bytes | str | Path, num_frames: int | None = None, max_frames: int = MAX_VIDEO_FRAMES,
               max_side: int | None = None, name: str = "") -> Video:
    """Decode a video file (bytes or path) into a ``Video``; see the module docstring. Raises InputError."""
    import av

    if num_frames is not None and (not isinstance(num_frames, (int, np.integer)) or num_frames < 1):
        raise ValueError(f"num_frames must be a positive integer or None, got {num_frames!r}")
    if not isinstance(max_frames, (int, np.integer)) or max_frames < 1:
        raise ValueError(f"max_frames must be a positive integer, got {max_frames!r}")
    if num_frames is not None and num_frames > max_frames:
        raise ValueError(f"num_frames={num_frames} is over max_frames={max_frames}")
    if max_side is not None and (not isinstance(max_side, (int, np.integer)) or max_side < 1):
        raise ValueError(f"max_side must be a positive integer or None, got {max_side!r}")
    data, label = _read_source(src, name)

    # pass 1: container facts and a frame count from the demuxer (packets only, no decoding)
    with _open(data, label) as c:
        fmt = c.format.name or ""
        if fmt in _IMAGE_FORMATS or fmt.endswith("_pipe"):
            raise InputError(f"{label}: this is a still image ({fmt.replace('_pipe', '')}), not a video; "
                             "open it as an image")
        if not c.streams.video:
            kinds = ", ".join(sorted({s.type for s in c.streams})) or "nothing"
            hint = "" if "audio" in kinds else "; truncated, or not a video?"
            raise InputError(f"{label}: the file has no video stream (it holds {kinds}{hint})")
        stream = c.streams.video[0]
        cc = stream.codec_context
        codec = getattr(getattr(cc, "codec", None), "name", None) if cc is not None else None
        if cc is None or codec is None:
            raise InputError(f"{label}: unsupported video codec ({getattr(stream, 'codec_tag', '?')}); "
                             "convert it to H.264 mp4 first")
        h, w = int(cc.height or 0), int(cc.width or 0)
        if h * w > MAX_IMAGE_PIXELS:
            raise InputError(f"{label}: {w}×{h} pixels per frame is over the {MAX_IMAGE_PIXELS / 1e6:.0f}-megapixel "
                             "limit; downscale it first")
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        source_fps = float(rate) if rate else 0.0
        duration = None
        if stream.duration is not None and stream.time_base:
            duration = float(stream.duration * stream.time_base)
        elif c.duration:
            duration = c.duration / 1e6
        declared = int(stream.frames or 0)  # from the container's index (mp4/mov/avi), 0 when unknown
        n_est = 0
        try:
            for pkt in c.demux(stream):
                if pkt.size:
                    n_est += 1
        except av.error.FFmpegError as e:
            raise InputError(f"{label}: the video is corrupt or truncated ({_short(e)})") from e
    if n_est == 0:
        raise InputError(f"{label}: the video has no frames")
    if declared and n_est < declared:
        raise InputError(f"{label}: the video is truncated or corrupt (its index lists {declared} frames, the file "
                         f"holds {n_est})")
    if h < 1 or w < 1:
        raise InputError(f"{label}: the video stream has no frame size")
    size = _target_size(h, w, max_side)

    def plan(total: int) -> np.ndarray:
        if num_frames is not None:
            return sample_indices(total, num_frames)
        return np.arange(total) if total <= max_frames else sample_indices(total, max_frames)

    keep = plan(n_est)
    need = len(keep) * size[0] * size[1] * 3
    if need > MAX_DECODED_BYTES:
        raise InputError(f"{label}: {len(keep)} frames of {size[1]}×{size[0]} would take {need / 2**30:.1f} GiB "
                         f"decoded (limit {MAX_DECODED_BYTES / 2**30:.1f} GiB); pass max_side or num_frames")
    got, total, rotation = _decode(data, label, keep, size)
    if total == 0:
        raise InputError(f"{label}: the video has no decodable frames")
    if total != n_est:  # packet count != frame count (invisible frames, edit lists, packed B-frames): redo
        keep = plan(total)
        if not set(int(i) for i in keep) <= set(got):
            got, total2, rotation = _decode(data, label, keep, size)
            if total2 != total:
                raise InputError(f"{label}: the video decodes differently on each pass (corrupt?)")
    if len({got[int(i)].shape for i in keep}) != 1:
        raise InputError(f"{label}: the frames change orientation mid-stream; robustlab needs one frame size")
    frames = np.stack([got[int(i)] for i in keep])
    if source_fps <= 0 and duration:
        source_fps = total / duration
    if not duration and source_fps > 0:
        duration = total / source_fps
    fps = source_fps
    if len(keep) != total and duration:
        fps = len(keep) / duration
    return Video(frames=np.ascontiguousarray(frames, dtype=np.uint8), fps=float(fps or 8.0),
                 source_fps=float(source_fps), codec=str(codec), container=fmt, original_size=(h, w),
                 duration=duration, n_frames_total=int(total), indices=keep.astype(np.int64), name=label,
                 rotation=rotation)


# ------------------------------------------------------------------------------------------ colour (BT.601)

def _check_frames(frames, what: str = "frames") -> np.ndarray:
    if isinstance(frames, Video):
        frames = frames.frames
    a = np.asarray(frames)
    if a.ndim != 4 or a.shape[-1] != 3 or a.dtype != np.uint8 or min(a.shape) < 1:
        raise ValueError(f"{what} must be a T×H×W×3 uint8 array with at least one 1×1 frame, got {a.dtype} "
                         f"{a.shape}")
    return a


def pad_even(frames: np.ndarray) -> np.ndarray:
    """Pad T×H×W×3 to even H and W by repeating the last row / column (4:2:0 needs even sizes)."""
    h, w = frames.shape[1:3]
    ph, pw = h % 2, w % 2
    if not (ph or pw):
        return frames
    return np.pad(frames, ((0, 0), (0, ph), (0, pw), (0, 0)), mode="edge")


_YUV_CHUNK = 8  # frames per vectorised step: int32 intermediates stay in the CPU caches


def rgb_to_yuv420(frames: np.ndarray) -> np.ndarray:
    """T×H×W×3 uint8 (even H, W) -> T×(3H/2)×W uint8 I420 planes (Y, then U, then V), BT.601 limited range."""
    t, h, w, _ = frames.shape
    out = np.empty((t, h * 3 // 2, w), np.uint8)
    for a in range(0, t, _YUV_CHUNK):
        b = min(a + _YUV_CHUNK, t)
        f = frames[a:b].astype(np.int32)
        r, g, bl = f[..., 0], f[..., 1], f[..., 2]
        out[a:b, :h] = ((66 * r + 129 * g + 25 * bl + 128) >> 8) + 16
        q = f[:, 0::2, 0::2] + f[:, 0::2, 1::2] + f[:, 1::2, 0::2] + f[:, 1::2, 1::2]  # 2×2 sums, exact
        rs, gs, bs = q[..., 0], q[..., 1], q[..., 2]
        uv = out[a:b, h:].reshape(b - a, 2, h // 2, w // 2)  # U then V, each (h/2)×(w/2) packed into w-wide rows
        uv[:, 0] = ((-38 * rs - 74 * gs + 112 * bs + 512) >> 10) + 128
        uv[:, 1] = ((112 * rs - 94 * gs - 18 * bs + 512) >> 10) + 128
    return out


def yuv420_to_rgb(planes: np.ndarray, h: int, w: int) -> np.ndarray:
    """Inverse of ``rgb_to_yuv420`` (T×(3H/2)×W I420 -> T×H×W×3 uint8), nearest chroma."""
    t = planes.shape[0]
    out = np.empty((t, h, w, 3), np.uint8)
    for a in range(0, t, _YUV_CHUNK):
        b = min(a + _YUV_CHUNK, t)
        c = 298 * (planes[a:b, :h].astype(np.int32) - 16) + 128
        uv = planes[a:b, h:].reshape(b - a, 2, h // 2, w // 2).astype(np.int32) - 128
        u = uv[:, 0].repeat(2, axis=1).repeat(2, axis=2)
        v = uv[:, 1].repeat(2, axis=1).repeat(2, axis=2)
        o = out[a:b]
        o[..., 0] = np.clip((c + 409 * v) >> 8, 0, 255)
        o[..., 1] = np.clip((c - 100 * u - 208 * v) >> 8, 0, 255)
        o[..., 2] = np.clip((c + 516 * u) >> 8, 0, 255)
    return out


def _yuv_frame(plane: np.ndarray, pts: int):
    import av

    vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(plane), format="yuv420p")
    vf.pts = pts
    return vf


def _frame_planes(frame) -> np.ndarray:
    """A decoded yuv420p VideoFrame -> (3H/2)×W I420 array (copied, strides removed)."""
    if frame.format.name != "yuv420p":
        frame = frame.reformat(format="yuv420p")
    return frame.to_ndarray()


# ------------------------------------------------------------------------------------------------ writing

def _x264_params(extra: str = "") -> str:
    asm = "SSE2" if platform.machine().lower() in ("x86_64", "amd64") else "0"
    p = f"asm={asm}:colorprim=smpte170m:transfer=smpte170m:colormatrix=smpte170m"
    return p + (":" + extra if extra else "")


def _rate(fps: float) -> fractions.Fraction:
    if not np.isfinite(fps) or fps <= 0 or fps > 1000:
        raise ValueError(f"fps must be in (0, 1000], got {fps!r}")
    return fractions.Fraction(float(fps)).limit_denominator(1001)


_CONTAINER_CODEC = {".mp4": "libx264", ".mov": "libx264", ".mkv": "libx264", ".m4v": "libx264",
                    ".webm": "libvpx-vp9", ".avi": "mpeg4", ".mpg": "mpeg2video", ".vob": "mpeg2video"}


def write_video(frames, path: str | Path, fps: float = 8.0, codec: str | None = None, crf: int = 18,
                preset: str = "medium") -> Path:
    """Encode T×H×W×3 uint8 frames to ``path``; the container follows the extension (.mp4/.mov/.mkv: H.264;
    .webm: VP9; .avi: MPEG-4 Part 2; .mpg/.vob: MPEG-2), ``codec`` overrides the encoder. Odd sizes are padded
    to even with edge pixels. H.264 mp4/mov get ``+faststart``."""
    import av

    a = pad_even(_check_frames(frames))
    path = Path(path)
    ext = path.suffix.lower()
    codec = codec or _CONTAINER_CODEC.get(ext)
    if codec is None:
        raise ValueError(f"unknown video extension {ext!r}; use one of {', '.join(sorted(_CONTAINER_CODEC))}")
    t, h, w, _ = a.shape
    planes = rgb_to_yuv420(a)
    opts = {"movflags": "+faststart"} if ext in (".mp4", ".mov", ".m4v") else {}
    with av.open(str(path), mode="w", options=opts) as c:
        s = c.add_stream(codec, rate=_rate(fps))
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.codec_context.thread_count = 1
        if codec == "libx264":
            s.options = {"crf": str(int(crf)), "preset": preset, "x264-params": _x264_params()}
        elif codec.startswith("libvpx"):
            s.options = {"crf": str(int(crf) + 12), "b": "0", "deadline": "good", "cpu-used": "4"}
        else:
            s.options = {"qmin": "3", "qmax": "3", "flags": "+bitexact", "dct": "int", "idct": "simple"}
        for i in range(t):
            for pkt in s.encode(_yuv_frame(planes[i], i)):
                c.mux(pkt)
        for pkt in s.encode(None):
            c.mux(pkt)
    return path


def write_mp4(frames, fps: float = 8.0, crf: int = 18, preset: str = "medium") -> bytes:
    """H.264 yuv420p mp4 bytes with +faststart that Chromium plays (see the module docstring).

    Odd sizes are padded to even by repeating the last row/column; 1-frame and 1×1 videos work (1×1 becomes
    2×2). ``crf`` 18 keeps noise-type perturbations visible. Deterministic: the same frames give the same bytes.
    """
    if isinstance(frames, Video) and fps == 8.0:
        fps = frames.fps
    with tempfile.TemporaryDirectory(prefix="robustlab-mp4-") as d:  # +faststart re-reads its own output
        p = Path(d) / "out.mp4"
        write_video(frames, p, fps=fps, codec="libx264", crf=crf, preset=preset)
        return p.read_bytes()


# ----------------------------------------------------------------------------------- encode -> decode

def effective_qscale(q: int) -> int:
    """What ``ffmpeg -q:v q`` quantises with for mpeg1video/mpeg2video/mpeg4: q clipped to [qmin=2, qmax=31]."""
    return int(min(max(int(q), QSCALE_MIN), QSCALE_MAX))


def encode_decode(frames, codec: str, *, qscale: int | None = None, bitrate: int | None = None,
                  fps: float = 30.0, preset: str | None = None, gop: int | None = None,
                  keep=None) -> np.ndarray:
    """Encode T×H×W×3 uint8 frames with a real encoder and decode them again (in memory, no container).

    ``codec``: ``mpeg1video``, ``mpeg2video``, ``mpeg4`` (FFmpeg's own encoders) or ``libx264``.
    ``qscale``: fixed quantiser as ``ffmpeg -q:v`` (MPEG-1/2/4 only). FFmpeg turns -q:v into a frame quality
    and the encoder clips the resulting quantiser to [qmin, qmax] = [2, 31], so -q:v 40 == -q:v 31. PyAV cannot
    set a frame's quality, so we fix the quantiser with qmin = qmax = clip(q, 2, 31) and i_qfactor = 1
    (I- and P-frames share it, as in fixed-qscale mode).
    ``bitrate``: target bits/s (one-pass ABR; for libx264 as ``-b:v``). ``fps`` matters for bitrate mode.
    ``preset``: x264 preset (default "medium"). ``gop``: keyframe interval (FFmpeg's default 12 for MPEG,
    x264's 250). Defaults of FFmpeg otherwise (no B-frames for MPEG-1/2/4; x264's preset decides for H.264).
    Odd sizes are padded with edge pixels for coding and cropped back. Deterministic (see module docstring).
    ``keep``: indices of the output frames to return (any order, repeats; all when None): the stream is decoded
    whole (its frames depend on each other) but only those are converted back to RGB, bit for bit
    ``encode_decode(...)[keep]`` at a fraction of the conversion's cost (lazy video perturbation samples 8–12).
    """
    import av

    a = _check_frames(frames)
    sel = None if keep is None else np.asarray(keep, dtype=np.int64).reshape(-1)
    if sel is not None and (len(sel) == 0 or sel.min() < 0 or sel.max() >= len(a)):
        raise ValueError(f"keep must hold frame indices in 0..{len(a) - 1}, got {keep!r}")
    if codec not in CODECS:
        raise ValueError(f"unknown codec {codec!r}; valid: {', '.join(CODECS)}")
    if (qscale is None) == (bitrate is None):
        raise ValueError("pass exactly one of qscale= (MPEG-1/2/4) or bitrate=")
    if qscale is not None and codec == "libx264":
        raise ValueError("qscale applies to mpeg1video/mpeg2video/mpeg4; use bitrate= for libx264")
    t, h0, w0, _ = a.shape
    p = pad_even(a)
    h, w = p.shape[1:3]
    planes = rgb_to_yuv420(p)
    rate = _rate(fps)

    enc = av.CodecContext.create(codec, "w")
    enc.width, enc.height, enc.pix_fmt = w, h, "yuv420p"
    enc.time_base = 1 / rate
    enc.framerate = rate
    enc.thread_count = 1
    opts: dict[str, str] = {}
    if codec == "libx264":
        enc.bit_rate = int(bitrate)
        opts.update({"preset": preset or "medium", "x264-params": _x264_params()})
        if gop:
            opts["g"] = str(int(gop))
    else:
        opts.update({"flags": "+bitexact", "dct": "int", "idct": "simple"})
        if gop:
            opts["g"] = str(int(gop))
        if qscale is not None:
            q = effective_qscale(qscale)
            opts.update({"qmin": str(q), "qmax": str(q), "i_qfactor": "1", "i_qoffset": "0"})
        else:
            enc.bit_rate = int(bitrate)
    enc.options = opts
    packets = []
    for i in range(t):
        packets.extend(enc.encode(_yuv_frame(planes[i], i)))
    packets.extend(enc.encode(None))

    dec = av.CodecContext.create(_DECODER.get(codec, codec), "r")
    dec.thread_count = 1
    dec.options = {"flags": "+bitexact", "idct": "simple"}
    wanted = None if sel is None else set(sel.tolist())
    out: dict = {}
    n_dec = 0
    for pkt in packets + [None]:
        for fr in dec.decode(pkt):
            if wanted is None or n_dec in wanted:
                out[n_dec] = _frame_planes(fr)
            n_dec += 1
    if n_dec != t:
        raise RuntimeError(f"{codec}: decoded {n_dec} frames from {t} encoded ones")
    rgb = yuv420_to_rgb(np.stack([out[i] for i in (range(t) if sel is None else sel.tolist())]), h, w)
    return np.ascontiguousarray(rgb[:, :h0, :w0])


def display_mp4(frames: np.ndarray, scale: int = 3, fps: float = 8.0) -> bytes:
    """H.264 mp4 bytes of a (small) video for the browser, upscaled ``scale``× with nearest neighbour."""
    v = np.asarray(frames)
    if scale > 1:
        v = v.repeat(scale, axis=1).repeat(scale, axis=2)
    return write_mp4(v, fps=fps)
