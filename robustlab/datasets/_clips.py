"""Reading a video file, or a time segment of it, as a few sampled frames (MSR-VTT, YouCook2).

``read_clip(path, start, end, num_frames=12, fps=None, max_frames=64, max_side=256)`` returns T×H×W×3 uint8 RGB.
It streams the file from disk with PyAV (no size limit, unlike reading an upload into memory) in two passes:

1. demux only (no decoding) from the keyframe before ``start``: the presentation times of the frames in
   ``[start, end)`` seconds — the clip's frame list;
2. choose frames from that list — with ``fps``, the frame at or after every ``1/fps`` seconds from ``start``
   (``num_frames`` is then ignored; CLIP4Clip's sampling is ``fps=1, max_frames=12``); else ``num_frames``
   uniformly (``np.linspace(0, T-1, num_frames).round()``, as ``robustlab.io.media.read_video`` and the papers
   do; repeated when the clip is shorter); else (``num_frames=None``) every frame. At most ``max_frames`` in
   every case (uniformly subsampled). Then seek again and decode up to the last chosen frame only.

Frames are converted by ``robustlab.io.media`` (RGB, FFmpeg's area filter down to ``max_side`` on the long side,
display rotation applied), so a clip read here matches the same frames read by the project's video reader.
Times are relative to the stream's first timestamp. Every failure is a one-line DatasetError naming the file (as
``robustlab.io.files.shown_path`` does: under the dashboard's data roots relative to its root, and a file outside
them reads as a missing one). Under the data roots the file is decoded from the descriptor that was checked
(``robustlab.io.files.open_fd``), never opened again by name.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np

from robustlab.datasets._local import check_n
from robustlab.datasets.base import Dataset, DatasetError
from robustlab.io import files as io_files  # by module: the limits are read (and patched) at call time
from robustlab.io import media as io_media
from robustlab.io.access import read_roots

VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm")
DEFAULT_NUM_FRAMES = 12  # uniformly over the clip (CLIP4Clip's max_frames for MSR-VTT)
DEFAULT_MAX_FRAMES = 64  # the cap whatever the sampling (as the uploads' MAX_UPLOAD_FRAMES)
DEFAULT_MAX_SIDE = 256  # long side, px (as the uploads' MAX_UPLOAD_SIDE)
_EPS = 1e-6
_REORDER_MARGIN = 5.0  # s: demuxing stops this far past ``end`` (decode order may run ahead of display order)


def check_sampling(who: str, num_frames, fps, max_frames, max_side) -> None:
    """DatasetError (one line) for sampling parameters a loader cannot use."""
    def pos_int(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1

    if num_frames is not None and not pos_int(num_frames):
        raise DatasetError(f"{who}: num_frames must be a positive integer or None, got {num_frames!r}")
    if not pos_int(max_frames):
        raise DatasetError(f"{who}: max_frames must be a positive integer, got {max_frames!r}")
    if fps is None and num_frames is not None and num_frames > max_frames:
        raise DatasetError(f"{who}: num_frames={num_frames} is over max_frames={max_frames}")
    if fps is not None and (isinstance(fps, bool) or not isinstance(fps, (int, float, np.number)) or
                            not 0 < float(fps) <= 1000):
        raise DatasetError(f"{who}: fps must be a number in (0, 1000] or None, got {fps!r}")
    if max_side is not None and not pos_int(max_side):
        raise DatasetError(f"{who}: max_side must be a positive integer or None, got {max_side!r}")


def _short(e: Exception) -> str:
    """A decoder's message in one short line, without the file name PyAV appends (the message's label names it,
    as a viewer may see it)."""
    return io_media._short(e)


def _seek(c, stream, t0: int, tb, start: float | None) -> None:
    if start and start > 0:
        try:
            c.seek(int(t0 + start / tb), stream=stream, backward=True, any_frame=False)
        except Exception:  # noqa: BLE001 - a container that cannot seek is read from its beginning
            pass


def choose(times: np.ndarray, lo: float, hi: float, num_frames: int | None, fps: float | None,
           max_frames: int) -> np.ndarray:
    """Indices into the clip's frame times (sorted) of the frames to keep (non-decreasing; may repeat)."""
    n = len(times)
    if fps is not None:
        targets = lo + np.arange(0.0, max(hi - lo, _EPS), 1.0 / float(fps))
        idx = np.minimum(np.searchsorted(times, targets - _EPS), n - 1)
        idx = np.unique(idx)  # a target between two frames of a slow video picks the same frame: keep it once
    elif num_frames is not None:
        return io_media.sample_indices(n, int(num_frames))
    else:
        idx = np.arange(n)
    if len(idx) > max_frames:
        idx = idx[io_media.sample_indices(len(idx), max_frames)]
    return idx.astype(np.int64)


class ClipSource:
    """A video file (or a time segment of it) whose frame list is known before anything is decoded: ``n_frames``
    (pass 1 of the module docstring: demuxing only) and ``read(indices) -> k×H×W×3`` (pass 2: seek once, decode up
    to the last wanted frame). Lazy perturbation reads only the frames a model will see through this protocol
    (``n_frames`` + ``read``). Every failure is a one-line DatasetError naming the file."""

    def __init__(self, path: str | Path, start: float | None = None, end: float | None = None, *,
                 max_side: int | None = DEFAULT_MAX_SIDE, who: str = "video", get: str = ""):
        self.path, self.who, self.max_side = Path(path), who, max_side
        self.label = label = io_files.shown_path(self.path)  # never a full server path under the data roots
        self._missing = f"{who}: video {label!r} is missing" + (f" ({get})" if get else "")
        if not io_files.is_file(self.path) or not io_files.visible(self.path):  # outside the data roots: missing
            raise DatasetError(self._missing)
        lo = float(start) if start is not None else 0.0
        hi = float(end) if end is not None else None
        if hi is not None and hi <= lo:
            raise DatasetError(f"{who}: {label!r}: empty segment [{lo:g}, {hi:g}] s")
        self.lo, self.hi = lo, hi
        import av

        with self._open() as c:
            if not c.streams.video:
                raise DatasetError(f"{who}: {label!r} has no video stream")
            s = c.streams.video[0]
            tb = s.time_base
            if not tb:
                raise DatasetError(f"{who}: {label!r}: the video stream has no time base; remux it to mp4")
            t0 = int(s.start_time or 0)
            h, w = int(s.codec_context.height or 0), int(s.codec_context.width or 0)
            if h < 1 or w < 1:
                raise DatasetError(f"{who}: {label!r}: the video stream has no frame size")
            if h * w > io_files.MAX_IMAGE_PIXELS:
                raise DatasetError(f"{who}: {label!r}: {w}×{h} pixels per frame is over the "
                                   f"{io_files.MAX_IMAGE_PIXELS / 1e6:.0f}-megapixel limit")
            duration = float(s.duration * tb) if s.duration else (c.duration / 1e6 if c.duration else None)
            _seek(c, s, t0, tb, lo)
            pts: set[int] = set()
            keys: list[int] = []
            try:
                for pkt in c.demux(s):
                    p = pkt.pts if pkt.pts is not None else pkt.dts
                    if not pkt.size or p is None:
                        continue
                    if pkt.is_keyframe:
                        keys.append(int(p))
                    t = float((p - t0) * tb)
                    if hi is not None and t > hi + _REORDER_MARGIN:
                        break
                    if t >= lo - _EPS and (hi is None or t < hi - _EPS):
                        pts.add(int(p))
            except av.error.FFmpegError as e:
                raise DatasetError(f"{who}: {label!r} is corrupt or truncated ({_short(e)})") from e
        if not pts:
            span = f"between {lo:g} and {hi:g} s" if hi is not None else f"after {lo:g} s"
            lasts = f" (it lasts {duration:.1f} s)" if duration else ""
            raise DatasetError(f"{who}: {label!r} has no frames {span}{lasts}")
        self.order = np.array(sorted(pts), dtype=np.int64)  # presentation timestamps of the clip's frames
        self.keyframes = np.array(sorted(keys), dtype=np.int64)
        self.times = (self.order - t0) * float(tb)  # seconds from the stream's start
        self._t0, self._tb, self._size = t0, tb, None
        self._size = io_media._target_size(h, w, max_side)

    @property
    def n_frames(self) -> int:
        return len(self.order)

    @property
    def identity(self) -> tuple:
        """What the frames read depend on (the file's path, size and modification time, the segment, the frame
        size), known without decoding: whole-clip work is shared by it (:mod:`robustlab.perturb.share`)."""
        try:
            st = self.path.stat()
            where = str(self.path.resolve())
        except (OSError, RuntimeError):  # gone since it was opened: as missing (never an OSError naming the path)
            raise DatasetError(self._missing) from None
        return (where, int(st.st_size), int(st.st_mtime_ns), self.lo, self.hi, self.max_side)

    def __len__(self) -> int:
        return self.n_frames

    @contextlib.contextmanager
    def _open(self):
        """The container, opened by name for the library and the CLI; under the dashboard's data roots decoded from
        the descriptor :func:`robustlab.io.files.open_fd` checked (a symlink swapped since is refused as missing)."""
        import av

        f = None
        try:
            if read_roots() is None:
                c = av.open(str(self.path), mode="r")
            else:
                if not io_files.visible(self.path):
                    raise DatasetError(self._missing)
                try:
                    f = os.fdopen(io_files.open_fd(self.path, self.label), "rb")
                except io_files.InputError:
                    raise DatasetError(self._missing) from None
                c = av.open(f, mode="r")
        except DatasetError:
            raise
        except (av.error.FFmpegError, OSError, ValueError) as e:
            if f is not None:
                f.close()
            raise DatasetError(f"{self.who}: {self.label!r} is not a video robustlab can read ({_short(e)})") from e
        try:
            with c:
                yield c
        finally:
            if f is not None:
                f.close()

    def read(self, indices) -> np.ndarray:
        """Frames ``indices`` (0-based into the clip's frame list; any order, repeats allowed) as k×H×W×3 uint8."""
        import av

        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if not idx.size or idx.min() < 0 or idx.max() >= self.n_frames:
            raise DatasetError(f"{self.who}: {self.label!r}: frame indices must be in 0..{self.n_frames - 1}")
        uniq = np.unique(idx)
        wanted = self.order[uniq]
        who, label = self.who, self.label
        out: list[np.ndarray | None] = [None] * len(wanted)
        # wanted frames with no keyframe between them are decoded in one pass; where a keyframe lies between two
        # wanted frames, the decoder seeks to it instead of decoding everything in between
        kf = np.searchsorted(self.keyframes, wanted, side="right")  # keyframes at or before each wanted frame
        gaps = np.flatnonzero(np.diff(kf) > 0) + 1
        runs = np.split(np.arange(len(uniq)), gaps)
        last = None
        with self._open() as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            for run in runs:
                k, stop = int(run[0]), int(run[-1]) + 1
                _seek(c, s, self._t0, self._tb, max(self.lo, float(self.times[uniq[k]])))
                try:
                    for frame in c.decode(s):
                        if frame.pts is None or frame.pts < wanted[k]:
                            continue
                        arr = None
                        while k < stop and frame.pts >= wanted[k]:  # a frame the decoder dropped: the next one
                            arr = io_media._to_rgb(frame, self._size) if arr is None else arr
                            out[k] = arr
                            k += 1
                        last = arr if arr is not None else last
                        if k == stop:
                            break
                except av.error.FFmpegError as e:
                    raise DatasetError(f"{who}: {label!r} is corrupt or truncated (decoding failed: {_short(e)})") \
                        from e
        if last is None:
            raise DatasetError(f"{who}: {label!r}: no frame could be decoded between {self.lo:g} and "
                               f"{self.hi if self.hi is not None else 'the end'} s")
        frames = [f if f is not None else last for f in out]
        if len({f.shape for f in frames}) != 1:
            raise DatasetError(f"{who}: {label!r}: the frame size changes mid-stream; robustlab needs one frame size")
        stack = np.stack(frames)
        return np.ascontiguousarray(stack[np.searchsorted(uniq, idx)], dtype=np.uint8)


def read_clip(path: str | Path, start: float | None = None, end: float | None = None, *,
              num_frames: int | None = DEFAULT_NUM_FRAMES, fps: float | None = None,
              max_frames: int = DEFAULT_MAX_FRAMES, max_side: int | None = DEFAULT_MAX_SIDE,
              who: str = "video", get: str = "") -> np.ndarray:
    """Frames of ``path`` between ``start`` and ``end`` seconds (None: the file's start / end); see the module
    docstring. Returns T×H×W×3 uint8. ``get`` (where the videos come from) ends the message for a missing file."""
    src = ClipSource(path, start, end, max_side=max_side, who=who, get=get)
    hi = src.hi if src.hi is not None else float(src.times[-1]) + _EPS
    return src.read(choose(src.times, src.lo, hi, num_frames, fps, max_frames))


__all__ = ["read_clip", "ClipSource", "choose", "check_sampling", "VIDEO_SUFFIXES", "DEFAULT_NUM_FRAMES",
           "DEFAULT_MAX_FRAMES", "DEFAULT_MAX_SIDE"]


class ClipDataset(Dataset):
    """Base of the video-file datasets (MSRVTT, YouCook2): the split check and the frame-sampling settings that
    :func:`read_clip` takes, in one place. Each subclass's ``name``, ``kind``, ``tasks`` and ``splits`` come from
    its registration (``register_dataset``)."""

    positives = "item"

    def _setup(self, root, split: str, n, num_frames, fps, max_frames, max_side, skip_missing, ann_file):
        """Check the split and sampling settings, initialise the Dataset; returns the checked ``n``."""
        who = self.name
        if split not in self.splits:
            raise DatasetError(f"{who} has no split {split!r}; splits: {', '.join(self.splits)}")
        n = check_n(n, who)
        check_sampling(who, num_frames, fps, max_frames, max_side)
        if fps is not None:
            num_frames = None
        Dataset.__init__(self, split=split, root=root, n=n, num_frames=num_frames, fps=fps, max_frames=max_frames,
                         max_side=max_side, skip_missing=bool(skip_missing) or None,
                         ann_file=str(ann_file) if ann_file else None)
        self.num_frames, self.fps, self.max_frames, self.max_side = num_frames, fps, max_frames, max_side
        return n
