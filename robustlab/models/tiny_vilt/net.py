"""tiny-vilt's network: the fusion layer (explicit attention math, so probabilities can be captured, replaced or
shrunk by QUAG-attention), :class:`TinyViltNet` and the grounding head's box decoding. Part of
:mod:`robustlab.models.tiny_vilt`."""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robustlab.models.builtin import ImageTower, preprocess_64
from robustlab.models.quag import TokenLayout as QuagLayout
from robustlab.models.tiny_vilt.config import TOKEN_AUX_CLASSES, TOKEN_GROUPS


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
