"""Stylize (V19): AdaIN style transfer as [P2] runs it through bethgelab/stylize-datasets.

Needs files robustlab cannot ship or download offline:

- ``vgg_normalised.pth`` and ``decoder.pth``: the AdaIN encoder/decoder of naoto0804/pytorch-AdaIN (its
  README's release links; the same files stylize-datasets' ``models/download_models.sh`` fetches);
- ``styles/``: a folder of style images (png/jpg/jpeg, searched recursively). [P2] uses random paintings from
  Kaggle's *Painter by Numbers* ``train.zip``.

They are looked up in ``$ROBUSTLAB_ADAIN_DIR`` or else ``~/.cache/robustlab/adain/``. The state dicts are read
with ``torch.load(weights_only=True)`` (no unpickling of arbitrary objects) into the exact ``nn.Sequential``
layouts of pytorch-AdaIN's ``net.py``, strictly. Without them ``stylize`` is listed unavailable with the reason;
it never produces a stand-in output. Availability is the registry's ``check`` hook, re-evaluated whenever
specs are listed, so files added to a running process are picked up.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from robustlab.perturb.registry import register

ENV_VAR = "ROBUSTLAB_ADAIN_DIR"
VGG_FILE = "vgg_normalised.pth"
DECODER_FILE = "decoder.pth"
STYLE_DIR = "styles"
STYLE_EXTENSIONS = (".png", ".jpg", ".jpeg")
MIN_SIDE = 16  # VGG's reflection pads need >= 2 px after three poolings; smaller inputs are edge-padded


def adain_dir() -> Path:
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "robustlab" / "adain"


def _has_style_image(d: Path) -> bool:
    for root, _dirs, files in os.walk(d):
        if any(f.lower().endswith(STYLE_EXTENSIONS) for f in files):
            return True
    return False


def availability_reason() -> str:
    """"" when weights and at least one style image are present, else what to put where."""
    d = adain_dir()
    missing = [f for f in (VGG_FILE, DECODER_FILE) if not (d / f).is_file()]
    if not (d / STYLE_DIR).is_dir() or not _has_style_image(d / STYLE_DIR):
        missing.append(f"{STYLE_DIR}/ (style images: png/jpg)")
    if not missing:
        return ""
    # named by the setting, never by the server's path (the reason reaches listings, reports and the dashboard)
    where = f"the folder ${ENV_VAR} names" if os.environ.get(ENV_VAR) else \
        f"~/.cache/robustlab/adain/ (or the folder ${ENV_VAR} names)"
    return (f"AdaIN files missing in {where}: "
            f"{', '.join(missing)}. Put pytorch-AdaIN's {VGG_FILE} and {DECODER_FILE} there, and a {STYLE_DIR}/ "
            "folder of paintings (P2 uses Kaggle Painter by Numbers train.zip)")


def style_files(d: Path) -> list[Path]:
    """Every style image under ``d/styles`` (recursive, case-insensitive extensions), sorted by path."""
    root = d / STYLE_DIR
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in STYLE_EXTENSIONS)


# ------------------------------------------------------------------------------------------------ networks

def _decoder():
    from torch import nn

    def block(cin, cout):
        return [nn.ReflectionPad2d((1, 1, 1, 1)), nn.Conv2d(cin, cout, (3, 3)), nn.ReLU()]

    up = nn.Upsample(scale_factor=2, mode="nearest")
    layers = (block(512, 256) + [up] + block(256, 256) + block(256, 256) + block(256, 256) + block(256, 128)
              + [nn.Upsample(scale_factor=2, mode="nearest")] + block(128, 128) + block(128, 64)
              + [nn.Upsample(scale_factor=2, mode="nearest")] + block(64, 64)
              + [nn.ReflectionPad2d((1, 1, 1, 1)), nn.Conv2d(64, 3, (3, 3))])
    return nn.Sequential(*layers)


def _vgg():
    """pytorch-AdaIN's normalised VGG-19 up to relu5_4 (53 modules, so the state dict keys match)."""
    from torch import nn

    def block(cin, cout):
        return [nn.ReflectionPad2d((1, 1, 1, 1)), nn.Conv2d(cin, cout, (3, 3)), nn.ReLU()]

    def pool():
        return nn.MaxPool2d((2, 2), (2, 2), (0, 0), ceil_mode=True)

    layers = ([nn.Conv2d(3, 3, (1, 1))] + block(3, 64) + block(64, 64) + [pool()]
              + block(64, 128) + block(128, 128) + [pool()]
              + block(128, 256) + block(256, 256) + block(256, 256) + block(256, 256) + [pool()]
              + block(256, 512) + block(512, 512) + block(512, 512) + block(512, 512) + [pool()]
              + block(512, 512) + block(512, 512) + block(512, 512) + block(512, 512))
    return nn.Sequential(*layers)


def build_networks():
    """(vgg, decoder) untrained, with the module layout of pytorch-AdaIN's net.py (for loading and tests)."""
    return _vgg(), _decoder()


@functools.lru_cache(maxsize=2)
def _load(d: str, stamp: tuple):
    import torch
    from torch import nn

    vgg, decoder = build_networks()
    vgg.load_state_dict(torch.load(os.path.join(d, VGG_FILE), map_location="cpu", weights_only=True))
    decoder.load_state_dict(torch.load(os.path.join(d, DECODER_FILE), map_location="cpu", weights_only=True))
    encoder = nn.Sequential(*list(vgg.children())[:31])  # input -> relu4_1, as stylize-datasets
    encoder.eval()
    decoder.eval()
    return encoder, decoder


def load_networks(d: Path | None = None):
    """(encoder up to relu4_1, decoder) on CPU, cached per directory and file modification times."""
    d = Path(d) if d is not None else adain_dir()
    files = [d / VGG_FILE, d / DECODER_FILE]
    stamp = tuple((f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    return _load(str(d), stamp)


@functools.lru_cache(maxsize=1)
def _style_list(d: str, stamp: int) -> tuple:
    return tuple(style_files(Path(d)))


def _calc_mean_std(feat, eps: float = 1e-5):
    n, c = feat.shape[:2]
    var = feat.reshape(n, c, -1).var(dim=2) + eps  # unbiased, as pytorch-AdaIN's function.py
    return feat.reshape(n, c, -1).mean(dim=2).reshape(n, c, 1, 1), var.sqrt().reshape(n, c, 1, 1)


def adain(content_feat, style_feat):
    s_mean, s_std = _calc_mean_std(style_feat)
    c_mean, c_std = _calc_mean_std(content_feat)
    return (content_feat - c_mean) / c_std * s_std + s_mean


def style_transfer(content: np.ndarray, style: np.ndarray, alpha: float, encoder, decoder) -> np.ndarray:
    """stylize-datasets' ``style_transfer`` + ``save_image`` on H×W×3 uint8 arrays (content not resized)."""
    import torch

    h, w = content.shape[:2]
    ph, pw = max(h, MIN_SIDE), max(w, MIN_SIDE)
    if (ph, pw) != (h, w):
        content = np.pad(content, ((0, ph - h), (0, pw - w), (0, 0)), mode="edge")
    sh, sw = style.shape[:2]
    if min(sh, sw) < MIN_SIDE:
        style = np.pad(style, ((0, max(0, MIN_SIDE - sh)), (0, max(0, MIN_SIDE - sw)), (0, 0)), mode="edge")

    def tensor(a):  # torchvision ToTensor
        return torch.from_numpy(np.ascontiguousarray(a)).permute(2, 0, 1).float().div(255).unsqueeze(0)

    with torch.no_grad():
        c_f = encoder(tensor(content))
        s_f = encoder(tensor(style))
        feat = adain(c_f, s_f) * alpha + c_f * (1 - alpha)
        out = decoder(feat)[0, :, :h, :w]  # the decoder returns 8·ceil(side/8) px: crop back
        out = out.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to(torch.uint8)  # save_image rounding
    return out.numpy().copy()


def _load_style(path: Path, style_size: int) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("RGB")
        if style_size:
            # torchvision Resize(int): shorter side -> style_size, bilinear with antialias (PIL)
            w, h = im.size
            if w <= h:
                size = (style_size, int(style_size * h / w))
            else:
                size = (int(style_size * w / h), style_size)
            im = im.resize(size, Image.BILINEAR)
        return np.asarray(im, dtype=np.uint8).copy()


@register("stylize", requires=("torch", "pillow"), check=lambda: availability_reason())
def stylize(img: np.ndarray, params: dict, rng: np.random.Generator) -> np.ndarray:
    reason = availability_reason()
    if reason:
        raise RuntimeError(f"perturbation 'stylize' is unavailable: {reason}")
    d = adain_dir()
    styles = _style_list(str(d), (d / STYLE_DIR).stat().st_mtime_ns)
    if not styles:
        raise RuntimeError(f"perturbation 'stylize' is unavailable: no style images under {d / STYLE_DIR}")
    style_path = styles[int(rng.integers(len(styles)))]
    encoder, decoder = load_networks(d)
    style = _load_style(style_path, int(params.get("style_size", 0)))
    return style_transfer(img, style, float(params["alpha"]), encoder, decoder)

