"""Fusion through transformers: ViLT (single-stream text+patch transformer), VQA and image–text matching heads.

    hf-vilt:dandelin/vilt-b32-finetuned-vqa     ViltForQuestionAnswering  -> vqa(), forward_with_attention()
    hf-vilt:dandelin/vilt-b32-finetuned-coco    ViltForImageAndTextRetrieval -> itm_score(), forward_with_attention()
    hf-vilt:dandelin/vilt-b32-finetuned-nlvr2   ViltForImagesAndTextClassification -> reason() (NLVR2: two images)
    hf-vilt:/path/to/folder                     a local save_pretrained folder (head from config.architectures)

A ViltForQuestionAnswering checkpoint whose labels are exactly SNLI-VE's three (entailment, neutral,
contradiction) is a visual-entailment head (``entail()``): how ViLT's classifier is fine-tuned on SNLI-VE.

One checkpoint carries one head; calling the other head's method raises ``NotImplementedError`` with the spec to
load instead. Frames (T×H×W×3) are fed as T images side by side in the sequence: each frame is patch-embedded on
its own (with its own image CLS), then the frames are concatenated after the text — the layout records which
frame every visual token comes from. (ViLT checkpoints were trained on single images; multi-frame input is an
extension, used by the video analyses.)

Attention capture/replacement patches each layer's ``ViltSelfAttention.forward`` (on the instance, restored on
exit) with a copy of the installed math plus the recorder hook between softmax and value mixing; under a
QUAG-attention intervention (Rawal et al. §2.4) the patched forward shrinks the keys and values instead (the
averaged modality's layer input, before the key/value projections) and records the equivalent N × N attention.
The visual tokens are put in canonical row-major patch order (ViLT's ``visual_embed`` returns them randomly
permuted; with patch position embeddings added the output is the same up to float rounding), so layouts are
reproducible.
"""
from __future__ import annotations

import copy
import math
from typing import Optional, Sequence

import numpy as np
import torch

from robustlab.io.convert import to_uint8_rgb
from robustlab.models.attention import (TEXT, VISUAL, AttentionCapture, AttentionRecorder, ReplaceFn,
                                        TokenLayout, current_intervention, dispatching_forward, layer_hook)
from robustlab.models.base import Fingerprinted, ModelInfo
from robustlab.models.hf_base import HFParts, bert_byte_tokenizer, random_init_description
from robustlab.models.hub import seeded, unavailable
from robustlab.models.protocols import as_frames
from robustlab.models.quag import TokenLayout as QuagLayout
from robustlab.models.registry import register_backend

HEADS = {"ViltForQuestionAnswering": "vqa", "ViltForImageAndTextRetrieval": "itm",
         "ViltForImagesAndTextClassification": "nlvr2"}
VE_LABELS = frozenset({"entailment", "neutral", "contradiction"})
# the robustlab tasks each head serves (Task.check_model reads ``supported_tasks``)
HEAD_TASKS = {"vqa": ("vqa", "clavi"), "itm": ("itm",), "nlvr2": ("reasoning",), "ve": ("entailment",)}


def vilt_image_processor(size: int, patch_size: int):
    """A ViLT image processor built in memory (shortest edge ``size``, sides multiples of the patch size)."""
    import transformers  # optional heavy dependency

    cls = getattr(transformers, "ViltImageProcessorPil", None) or transformers.ViltImageProcessor
    return cls(size={"shortest_edge": size}, size_divisor=patch_size)


def _vilt_quag_attention(mod, layer_idx: int, hook, qa, hidden_states, output_attentions: bool):
    """QUAG-attention (Rawal et al. §2.4) in one ViltSelfAttention: keys and values from the layer's (already
    layer-normed) input with a modality averaged over its valid tokens (:class:`robustlab.models.quag.QuagAttention`),
    queries full length; padding is masked through the effective sizes (size 0), so ViLT's additive mask is not
    needed. The recorder gets the equivalent N × N attention."""
    B, N, _ = hidden_states.shape
    hd = mod.attention_head_size
    lay = hook.layout if isinstance(hook.layout, QuagLayout) else QuagLayout.from_model(hook.layout)
    q = mod.query(hidden_states).view(B, N, -1, hd).transpose(1, 2)
    yk, sizes, cols = qa.keys_values(hidden_states, lay)
    k = mod.key(yk).view(B, yk.shape[1], -1, hd).transpose(1, 2)
    v = mod.value(yk).view(B, yk.shape[1], -1, hd).transpose(1, 2)
    scores = qa.correct(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd), sizes.to(q.dtype), cols)
    probs = mod.dropout(torch.softmax(scores, dim=-1))
    ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
    ctx = ctx.view(*ctx.shape[:-2], mod.all_head_size)
    full = qa.expand(probs, cols, N)
    if getattr(hook, "records", False):
        hook(layer_idx, full)
    return (ctx, full) if output_attentions else (ctx,)


def _vilt_attention_forward(mod, layer_idx: int, hook):
    """The installed ViltSelfAttention.forward math, with ``hook(layer_idx, probs)`` after softmax+dropout (or
    QUAG-attention's shrunk keys and values when the hook's intervention is one)."""

    def forward(hidden_states, attention_mask=None, output_attentions=False, *args, **kwargs):
        qa = getattr(getattr(hook, "replace", None), "quag_attention", None)
        if qa is not None and qa.applies(layer_idx):
            return _vilt_quag_attention(mod, layer_idx, hook, qa, hidden_states, output_attentions)
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, mod.attention_head_size)
        q = mod.query(hidden_states).view(hidden_shape).transpose(1, 2)
        k = mod.key(hidden_states).view(hidden_shape).transpose(1, 2)
        v = mod.value(hidden_states).view(hidden_shape).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(mod.attention_head_size)
        if attention_mask is not None:
            if attention_mask.dtype == torch.bool:  # defensive: a boolean "may attend" mask
                scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
            else:
                scores = scores + attention_mask
        probs = mod.dropout(torch.softmax(scores, dim=-1))
        probs = hook(layer_idx, probs)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(*ctx.shape[:-2], mod.all_head_size)
        return (ctx, probs) if output_attentions else (ctx,)

    return forward


class HFViltModel(HFParts, Fingerprinted):
    """A transformers ViLT checkpoint with its head (VQA or ITM), processor pieces and attention capture."""

    backend = "hf-vilt"
    MODEL_TYPES = ("vilt",)

    def __init__(self, model, image_processor, tokenizer, *, model_id: str, device=None, half: bool | None = None,
                 random_init: bool = False, description: str = ""):
        head = HEADS.get(type(model).__name__)
        if head is None:
            raise ValueError(f"unsupported ViLT class {type(model).__name__} (supported: {', '.join(HEADS)})")
        labels = {str(v).lower() for v in (getattr(model.config, "id2label", None) or {}).values()}
        self.head = "ve" if head == "vqa" and labels == VE_LABELS else head
        self._hold(model, image_processor, tokenizer, model_id=model_id, random_init=random_init,
                   description=description)
        self._place_model(device, half)
        cfg = model.config
        self.patch_size = int(cfg.patch_size)
        self.image_size = int(cfg.image_size)
        self.max_text = int(cfg.max_position_embeddings)
        self.n_layers = int(cfg.num_hidden_layers)
        self.n_heads = int(cfg.num_attention_heads)

    # ---- constructors -----------------------------------------------------------------------------
    @classmethod
    def _model_class(cls, config, what: str):
        from transformers import (ViltForImageAndTextRetrieval,  # optional heavy dependency
                                  ViltForImagesAndTextClassification, ViltForQuestionAnswering)

        arch = (getattr(config, "architectures", None) or [""])[0]
        if arch == "ViltForImageAndTextRetrieval":
            return ViltForImageAndTextRetrieval
        if arch == "ViltForImagesAndTextClassification":
            return ViltForImagesAndTextClassification
        if arch == "ViltForQuestionAnswering" or getattr(config, "id2label", None):
            return ViltForQuestionAnswering
        raise unavailable(what, f"checkpoint architecture {arch or 'unknown'!r} has no VQA or ITM head")

    @classmethod
    def from_config(cls, config, head: str = "vqa", device=None, half: bool | None = None,
                    seed: int = 0) -> "HFViltModel":
        """A random-init ViLT from an in-memory ``ViltConfig`` (plumbing tests; never results)."""
        from transformers import ViltForImageAndTextRetrieval, ViltForImagesAndTextClassification, \
            ViltForQuestionAnswering  # optional heavy dependency

        if getattr(config, "model_type", None) != "vilt":
            raise ValueError(f"from_config builds ViLT models only, got {getattr(config, 'model_type', None)!r}")
        config = copy.deepcopy(config)
        tok = bert_byte_tokenizer(int(config.max_position_embeddings))
        if config.vocab_size < len(tok):
            raise ValueError(f"vocab_size={config.vocab_size} is smaller than the tokenizer's {len(tok)} ids")
        config.pad_token_id = tok.pad_token_id
        if head == "ve":
            config.id2label = {0: "entailment", 1: "neutral", 2: "contradiction"}
            config.label2id = {v: k for k, v in config.id2label.items()}
        if head == "nlvr2":
            config.num_images = 2
            config.modality_type_vocab_size = max(int(config.modality_type_vocab_size), 3)  # text, image 1, image 2
            config.id2label, config.label2id = {0: "False", 1: "True"}, {"False": 0, "True": 1}
        model_cls = {"vqa": ViltForQuestionAnswering, "ve": ViltForQuestionAnswering,
                     "itm": ViltForImageAndTextRetrieval, "nlvr2": ViltForImagesAndTextClassification}[head]
        with seeded(seed):
            model = model_cls(config)
        return cls(model, vilt_image_processor(int(config.image_size), int(config.patch_size)), tok, device=device,
                   half=half, random_init=True,
                   model_id=f"hf-vilt:random-init/{head}-h{config.hidden_size}-l{config.num_hidden_layers}",
                   description=random_init_description(model))

    # ---- info -----------------------------------------------------------------------------------
    def fingerprint_config(self) -> dict:
        return {"head": self.head, "image_size": self.image_size, "max_text": self.max_text, **self.parts_identity()}

    @property
    def quag_attention_refusal(self) -> Optional[str]:
        """Why QUAG-attention cannot run on this model (one line), or None when it can."""
        if self.head == "nlvr2":
            return "the NLVR2 head runs its two images through the model directly, where no intervention reaches"
        bad = [i for i, m in enumerate(self._self_attentions())
               if not all(hasattr(m, a) for a in ("query", "key", "value", "attention_head_size", "all_head_size"))]
        if bad:
            return (f"the self-attention of layer {bad[0]} has no separate query/key/value projections in this "
                    f"transformers version")
        return None

    @property
    def supports_quag_attention(self) -> bool:
        """QUAG-attention runs in the patched self-attention forward (the key/value projections of the averaged
        layer input); see :attr:`quag_attention_refusal`."""
        return self.quag_attention_refusal is None

    @property
    def supported_tasks(self) -> tuple[str, ...]:
        """The tasks this checkpoint's one head serves (both methods exist; the other head's raises)."""
        return HEAD_TASKS[self.head]

    def info(self) -> ModelInfo:
        return self._info(int(self.model.config.hidden_size),
                          {"head": self.head, "layers": self.n_layers, "heads": self.n_heads})

    @property
    def labels(self) -> list[str]:
        id2label = getattr(self.model.config, "id2label", None) or {}
        return [str(id2label.get(i, id2label.get(str(i), i))) for i in range(len(id2label))]

    def __repr__(self) -> str:
        return f"<HFViltModel {self.model_id} head={self.head} on {self.device}>"

    # ---- inputs -----------------------------------------------------------------------------------
    def _self_attentions(self) -> list[torch.nn.Module]:
        return [layer.attention.attention for layer in self.model.vilt.encoder.layer]

    def _install_dispatch(self) -> None:
        """Each self-attention module's forward becomes, once and for good, a dispatcher: the installed forward
        unless the calling context has a layer hook (see :func:`robustlab.models.attention.dispatching_forward`),
        so concurrent sessions sharing this model never see each other's hooks."""
        for i, m in enumerate(self._self_attentions()):
            if getattr(m.__dict__.get("forward"), "robustlab_dispatch", False):
                continue
            m.forward = dispatching_forward(m.forward, lambda hook, _m=m, _i=i: _vilt_attention_forward(_m, _i, hook))

    def _text_inputs(self, text: str, pad_to: Optional[int]) -> dict[str, torch.Tensor]:
        pad_kw = {"padding": "max_length", "max_length": min(int(pad_to), self.max_text)} if pad_to else \
            {"padding": False, "max_length": self.max_text}
        enc = self.tokenizer([str(text)], truncation=True, return_tensors="pt", **pad_kw)
        out = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        out["token_type_ids"] = enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))
        return {k: v.to(self.device) for k, v in out.items()}

    def _visual_inputs(self, frames: Sequence[np.ndarray]):
        """Patch-embed each frame (canonical row-major order), concatenated: embeds 1×V×D, mask 1×V, token info."""
        emb = self.model.vilt.embeddings
        embeds, masks, frame_of, rc, grid = [], [], [], [], (0, 0)
        for f, frame in enumerate(frames):
            enc = self.image_processor(images=[frame], return_tensors="pt", input_data_format="channels_last")
            pix = enc["pixel_values"].to(self.device, dtype=self.dtype)
            pmask = enc.get("pixel_mask")
            pmask = torch.ones(pix.shape[0], *pix.shape[2:], dtype=torch.long) if pmask is None else pmask
            with seeded(0):  # visual_embed draws a random permutation; keep the global RNG untouched
                x, x_mask, (patch_index, (gh, gw)) = emb.visual_embed(pix, pmask.to(self.device),
                                                                      max_image_length=-1)
            order = (patch_index[0, :, 0] * gw + patch_index[0, :, 1]).argsort()
            idx = torch.cat([torch.zeros(1, dtype=torch.long, device=order.device), order + 1])
            x, x_mask, pi = x[:, idx], x_mask[:, idx], patch_index[0, order].cpu().numpy()
            embeds.append(x)
            masks.append(x_mask)
            frame_of += [f] * x.shape[1]
            rc += [(-1, -1)] + [tuple(int(v) for v in p) for p in pi]
            grid = (int(gh), int(gw))
        image_embeds = torch.cat(embeds, dim=1)
        pixel_mask = torch.cat(masks, dim=1).long()
        return image_embeds, pixel_mask, np.array(frame_of), np.array(rc, dtype=int).reshape(-1, 2), grid

    def _layout(self, text_inputs, pixel_mask, frame_of, rc, grid, n_frames) -> TokenLayout:
        ids = text_inputs["input_ids"][0].tolist()
        tmask = text_inputs["attention_mask"][0].cpu().numpy().astype(bool)
        toks = self.tokenizer.convert_ids_to_tokens(ids)
        specials = {self.tokenizer.cls_token: "[CLS]", self.tokenizer.sep_token: "[SEP]",
                    self.tokenizer.pad_token: "[PAD]"}
        t_special = ["" if not m else specials.get(t, "") for t, m in zip(toks, tmask)]
        t_labels = [t if m else "[PAD]" for t, m in zip(toks, tmask)]
        vmask = pixel_mask[0].cpu().numpy().astype(bool)
        v_special, v_labels = [], []
        for f, (r, c), m in zip(frame_of, rc, vmask):
            if r < 0:
                v_special.append("[IMG_CLS]")
                v_labels.append(f"[IMG_CLS] f{f}")
            else:
                v_special.append("")
                v_labels.append(f"f{f} p({r},{c})" if m else f"f{f} [PAD]")
        nt, nv = len(ids), len(frame_of)
        return TokenLayout(
            modality=np.array([TEXT] * nt + [VISUAL] * nv),
            special=np.array(t_special + v_special, dtype=object).astype(str),
            is_pad=np.concatenate([~tmask, ~vmask]),
            frame=np.concatenate([np.full(nt, -1), frame_of]).astype(int),
            patch=np.concatenate([np.full((nt, 2), -1), rc]).astype(int),
            tokens=t_labels + v_labels, grid=grid, n_frames=n_frames)

    # ---- forward --------------------------------------------------------------------------------
    def forward_with_attention(self, image, text: str, replace: Optional[ReplaceFn] = None,
                               pad_to: Optional[int] = None) -> AttentionCapture:
        """One (image or frames, text) forward; every layer's attention, the layout and the head's outputs.

        ``replace(layer_idx, probs, layout)`` may substitute each layer's attention probabilities (B×H×N×N torch).
        ``pad_to`` pads the text to that many tokens (to study padding; at most max_position_embeddings).
        """
        frames = as_frames(image)
        text_inputs = self._text_inputs(text, pad_to)
        image_embeds, pixel_mask, frame_of, rc, grid = self._visual_inputs(frames)
        layout = self._layout(text_inputs, pixel_mask, frame_of, rc, grid, len(frames))
        if replace is None:
            replace = current_intervention()
        rec = AttentionRecorder(self.n_layers, replace=replace, layout=layout)
        self._install_dispatch()
        with torch.inference_mode(), layer_hook(rec):
            out = self.model(**text_inputs, image_embeds=image_embeds, pixel_mask=pixel_mask)
        logits = out.logits[0].float().cpu().numpy()
        outputs: dict = {"logits": logits, "head": self.head}
        if self.head == "itm":
            outputs["itm_score"] = float(logits.reshape(-1)[0])
        else:
            outputs.update(zip(("answer", "scores"), self._answer(logits)))
        return AttentionCapture(attentions=rec.stacked(0), layout=layout, outputs=outputs,
                                replaced=replace is not None, model_id=self.model_id)

    def _answer(self, logits: np.ndarray, top_k: int = 5) -> tuple[str, dict[str, float]]:
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))  # VQA heads are trained with BCE
        labels = self.labels or [str(i) for i in range(len(probs))]
        top = np.argsort(-probs)[:top_k]
        return labels[int(top[0])], {labels[int(i)]: float(probs[i]) for i in top}

    def _need(self, head: str) -> None:
        if self.head != head:
            other = {"vqa": "hf-vilt:dandelin/vilt-b32-finetuned-vqa",
                     "itm": "hf-vilt:dandelin/vilt-b32-finetuned-coco",
                     "nlvr2": "hf-vilt:dandelin/vilt-b32-finetuned-nlvr2",
                     "ve": "a ViLT checkpoint fine-tuned on SNLI-VE (labels entailment/neutral/contradiction)"}[head]
            raise NotImplementedError(f"{self.model_id} has a {self.head} head, not {head}; load e.g. {other}")

    def itm_score(self, image_or_frames, text: str) -> float:
        self._need("itm")
        return float(self.forward_with_attention(image_or_frames, text).outputs["itm_score"])

    def vqa(self, image_or_frames, question: str) -> tuple[str, dict[str, float]]:
        self._need("vqa")
        o = self.forward_with_attention(image_or_frames, question).outputs
        return o["answer"], o["scores"]

    def entail(self, image, hypothesis: str) -> tuple[str, dict[str, float]]:
        """SNLI-VE: ("entailment" | "neutral" | "contradiction", softmax scores) for an image and a hypothesis."""
        self._need("ve")
        logits = self.forward_with_attention(image, hypothesis).outputs["logits"].astype(np.float64)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        labels = [s.lower() for s in self.labels]
        return labels[int(np.argmax(p))], {labels[i]: float(p[i]) for i in range(len(p))}

    def reason(self, images: Sequence[np.ndarray], sentence: str) -> tuple[bool, float]:
        """NLVR2: is ``sentence`` true of the two images? (answer, probability of True)."""
        self._need("nlvr2")
        pair = [to_uint8_rgb(np.asarray(im)) for im in images]
        if len(pair) != 2:
            raise ValueError(f"NLVR2 reasons over two images, got {len(pair)}")
        enc = self.image_processor(images=pair, return_tensors="pt", input_data_format="channels_last")
        pix = enc["pixel_values"].to(self.device, dtype=self.dtype).unsqueeze(0)
        pmask = enc.get("pixel_mask")
        pmask = torch.ones(1, 2, *pix.shape[3:], dtype=torch.long) if pmask is None else pmask.unsqueeze(0)
        text = self._text_inputs(sentence, None)
        with torch.inference_mode(), seeded(0):
            logits = self.model(**text, pixel_values=pix, pixel_mask=pmask.to(self.device)).logits[0].float()
        p = torch.softmax(logits, -1).cpu().numpy()
        labels = [s.lower() for s in self.labels] or ["false", "true"]
        p_true = float(p[labels.index("true")]) if "true" in labels else float(p[-1])
        return p_true > 0.5, p_true


@register_backend("hf-vilt", description="transformers ViLT fusion: a VQA, image-text matching, NLVR2 or SNLI-VE head "
                                         "(one per checkpoint), attention capture/replacement",
                  tasks=("vqa", "clavi", "itm", "reasoning", "entailment"),
                  example="hf-vilt:dandelin/vilt-b32-finetuned-vqa", requires=("transformers",), model_types=("vilt",))
def load_spec(rest: str, device=None, **kwargs) -> HFViltModel:
    """The ``hf-vilt:`` loader of the model registry."""
    return HFViltModel.from_pretrained(rest, device=device, **kwargs)


__all__ = ["HFViltModel", "bert_byte_tokenizer", "vilt_image_processor", "load_spec"]
