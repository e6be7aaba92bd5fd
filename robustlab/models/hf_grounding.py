"""Grounding through transformers: the best box for a referring expression.

    hf-grounding:google/owlvit-base-patch32             OwlViTForObjectDetection (OWL-ViT)
    hf-grounding:google/owlv2-base-patch16-ensemble     Owlv2ForObjectDetection (OWLv2)
    hf-grounding:IDEA-Research/grounding-dino-tiny      GroundingDinoForObjectDetection
    hf-grounding:/path/to/folder                        a local save_pretrained folder (kind from config.model_type)

``ground(image, expression) -> Box``: the highest-scoring predicted box for the whole expression, in input-image
pixels (x0, y0, x1, y1), with its sigmoid score.

* OWL-ViT: the image is resized to a square (no padding), so normalised boxes scale by (W, H).
* OWLv2: the image is padded bottom/right to a square then resized, so normalised boxes scale by max(W, H).
* Grounding DINO: DETR-style resize that keeps the aspect ratio; boxes are normalised to the image, scaled by
  (W, H). A query's score is its best sigmoid over the expression's tokens (as the processor's post-processing).
"""
from __future__ import annotations

import copy

import numpy as np
import torch

from robustlab.io.convert import to_uint8_rgb
from robustlab.models.base import Fingerprinted, ModelInfo
from robustlab.models.hf_base import HFParts, bert_byte_tokenizer, byte_tokenizer, random_init_description
from robustlab.models.hub import seeded
from robustlab.models.protocols import Box
from robustlab.models.registry import register_backend

KINDS = ("owlvit", "owlv2", "grounding-dino")


def _model_class(kind: str):
    import transformers  # optional heavy dependency

    return {"owlvit": transformers.OwlViTForObjectDetection, "owlv2": transformers.Owlv2ForObjectDetection,
            "grounding-dino": transformers.GroundingDinoForObjectDetection}[kind]


def owl_image_processor(kind: str, size: int):
    """An OWL-ViT / OWLv2 image processor built in memory (PIL backend where transformers has one)."""
    import transformers  # optional heavy dependency

    name = {"owlvit": "OwlViTImageProcessor", "owlv2": "Owlv2ImageProcessor"}[kind]
    cls = getattr(transformers, name + "Pil", None) or getattr(transformers, name)
    kw = {"size": {"height": size, "width": size}}
    if kind == "owlvit":
        kw["crop_size"] = {"height": size, "width": size}
    return cls(**kw)


def dino_image_processor(shortest_edge: int):
    """A Grounding DINO image processor built in memory (aspect kept, longest edge ≤ 5/3 of the shortest)."""
    import transformers  # optional heavy dependency

    cls = getattr(transformers, "GroundingDinoImageProcessorPil", None) or transformers.GroundingDinoImageProcessor
    return cls(size={"shortest_edge": shortest_edge, "longest_edge": int(shortest_edge * 5 / 3)})


def _cxcywh_to_xyxy(b: np.ndarray) -> np.ndarray:
    cx, cy, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1)


class HFGroundingModel(HFParts, Fingerprinted):
    """A transformers open-vocabulary detector used for referring-expression grounding (one box per query)."""

    backend = "hf-grounding"
    MODEL_TYPES = KINDS

    def __init__(self, model, image_processor, tokenizer, *, model_id: str, device=None, half: bool | None = None,
                 random_init: bool = False, description: str = ""):
        self.kind = model.config.model_type
        if self.kind not in KINDS:
            raise ValueError(f"unsupported grounding model_type {self.kind!r} (supported: {', '.join(KINDS)})")
        self._hold(model, image_processor, tokenizer, model_id=model_id, random_init=random_init,
                   description=description)
        self._place_model(device, half)
        cfg = model.config
        if self.kind == "grounding-dino":
            self.text_length = int(getattr(cfg, "max_text_len", 256))
            self.image_size = int((getattr(image_processor, "size", None) or {}).get("shortest_edge", 800))
        else:
            self.text_length = int(cfg.text_config.max_position_embeddings)
            self.image_size = int(cfg.vision_config.image_size)

    # ---- constructors -----------------------------------------------------------------------------
    @classmethod
    def _model_class(cls, config, what: str):
        return _model_class(config.model_type)

    @classmethod
    def from_config(cls, config, device=None, half: bool | None = None, seed: int = 0) -> "HFGroundingModel":
        """A random-init OWL-ViT / OWLv2 / Grounding DINO from an in-memory config (plumbing tests; never results).

        No processor files exist: OWL gets :func:`byte_tokenizer` (CLIP layout), Grounding DINO the BERT-layout
        byte tokenizer (both in :mod:`robustlab.models.hf_base`); image processors are built from the config's sizes.
        """
        kind = getattr(config, "model_type", None)
        if kind not in KINDS:
            raise ValueError(f"from_config builds {', '.join(KINDS)} models only, got model_type {kind!r}")
        config = copy.deepcopy(config)
        tcfg = config.text_config
        if kind == "grounding-dino":
            tok = bert_byte_tokenizer(int(config.max_text_len))
            tcfg.pad_token_id = tok.pad_token_id
        else:
            tok = byte_tokenizer(int(tcfg.max_position_embeddings))
            tcfg.bos_token_id, tcfg.eos_token_id = tok.bos_token_id, tok.eos_token_id
            tcfg.pad_token_id = tok.pad_token_id
        if tcfg.vocab_size < len(tok):
            raise ValueError(f"text_config.vocab_size={tcfg.vocab_size} is smaller than the tokenizer's {len(tok)}")
        with seeded(seed):
            model = _model_class(kind)(config)
        if kind == "grounding-dino":
            size = int(getattr(config.backbone_config, "image_size", 64))
            processor, tag = dino_image_processor(size), f"{kind}-d{config.d_model}-{size}px"
        else:
            size = int(config.vision_config.image_size)
            v = config.vision_config
            processor, tag = owl_image_processor(kind, size), f"{kind}-h{v.hidden_size}-l{v.num_hidden_layers}-{size}px"
        return cls(model, processor, tok, device=device, half=half, random_init=True,
                   model_id=f"hf-grounding:random-init/{tag}",
                   description=random_init_description(model))

    # ---- info -----------------------------------------------------------------------------------
    def fingerprint_config(self) -> dict:
        return {"kind": self.kind, "image_size": self.image_size, "text_length": self.text_length,
                **self.parts_identity()}

    def info(self) -> ModelInfo:
        return self._info(0, {"kind": self.kind})

    def __repr__(self) -> str:
        return f"<HFGroundingModel {self.model_id} ({self.kind}) on {self.device}>"

    # ---- inference ------------------------------------------------------------------------------
    def _pixels(self, image: np.ndarray) -> dict[str, torch.Tensor]:
        enc = self.image_processor(images=[image], return_tensors="pt", input_data_format="channels_last")
        out = {"pixel_values": enc["pixel_values"].to(self.device, dtype=self.dtype)}
        if "pixel_mask" in enc:
            out["pixel_mask"] = enc["pixel_mask"].to(self.device)
        return out

    def _text(self, expression: str) -> dict[str, torch.Tensor]:
        text = str(expression).strip()
        if self.kind == "grounding-dino":
            text = text.lower()
            text = text if text.endswith(".") else text + "."  # the format Grounding DINO was trained on
            enc = self.tokenizer([text], padding="longest", truncation=True, max_length=self.text_length,
                                 return_tensors="pt")
        else:  # OWL: CLIP-style text, padded to the text model's length
            enc = self.tokenizer([text], padding="max_length", truncation=True, max_length=self.text_length,
                                 return_tensors="pt")
        keep = ("input_ids", "attention_mask", "token_type_ids")
        return {k: v.to(self.device) for k, v in enc.items() if k in keep}

    def scores_and_boxes(self, image, expression: str) -> tuple[np.ndarray, np.ndarray]:
        """Every predicted box (Q×4, input-image pixels, xyxy) and its score (Q,) for the expression."""
        img = to_uint8_rgb(image)
        h, w = img.shape[:2]
        text = self._text(expression)
        with torch.inference_mode():
            out = self.model(**text, **self._pixels(img))
        logits = out.logits[0].float()  # owl: Q × n_queries(=1); dino: Q × text tokens
        if self.kind == "grounding-dino":
            mask = text["attention_mask"][0].bool().to(logits.device)
            n = min(int(mask.shape[0]), logits.shape[-1])
            tok_logits = logits[:, :n].masked_fill(~mask[:n], float("-inf"))
            scores = tok_logits.max(-1).values.sigmoid()
        else:
            scores = logits.max(-1).values.sigmoid()
        boxes = _cxcywh_to_xyxy(out.pred_boxes[0].float().cpu().numpy())
        sx, sy = (max(w, h), max(w, h)) if self.kind == "owlv2" else (w, h)
        boxes = boxes * np.array([sx, sy, sx, sy], np.float32)
        boxes = np.clip(boxes, 0, [w, h, w, h])
        return scores.cpu().numpy().astype(np.float32), boxes.astype(np.float32)

    def ground(self, image, expression: str) -> Box:
        scores, boxes = self.scores_and_boxes(image, expression)
        i = int(np.argmax(scores))
        x0, y0, x1, y1 = (float(v) for v in boxes[i])
        return Box(x0, y0, x1, y1, float(scores[i]))


@register_backend("hf-grounding", description="transformers OWL-ViT / OWLv2 / Grounding DINO: best box for a referring "
                                              "expression",
                  tasks=("grounding",), example="hf-grounding:google/owlv2-base-patch16-ensemble",
                  requires=("transformers",), model_types=("owlvit", "owlv2", "grounding-dino"))
def load_spec(rest: str, device=None, **kwargs) -> HFGroundingModel:
    """The ``hf-grounding:`` loader of the model registry."""
    return HFGroundingModel.from_pretrained(rest, device=device, **kwargs)


__all__ = ["HFGroundingModel", "owl_image_processor", "dino_image_processor", "KINDS", "load_spec"]
