"""tiny-vilt's losses: VQA, ITM, grounding (cell cross-entropy, L1 and GIoU on the boxes), the attention-pool loss
and the per-token attribute loss. Part of :mod:`robustlab.training.tiny_vilt`."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from robustlab.models.tiny_vilt import TOKEN_GROUPS, cxcywh_to_xyxy, decode_boxes

AUX_W, POOL_W = 0.5, 0.5


def giou_loss(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """1 - GIoU for xyxy boxes (…×4)."""
    ix = (torch.minimum(a[..., 2], b[..., 2]) - torch.maximum(a[..., 0], b[..., 0])).clamp_min(0)
    iy = (torch.minimum(a[..., 3], b[..., 3]) - torch.maximum(a[..., 1], b[..., 1])).clamp_min(0)
    inter = ix * iy
    area = lambda z: (z[..., 2] - z[..., 0]).clamp_min(0) * (z[..., 3] - z[..., 1]).clamp_min(0)  # noqa: E731
    union = area(a) + area(b) - inter
    iou = inter / union.clamp_min(1e-7)
    cw = torch.maximum(a[..., 2], b[..., 2]) - torch.minimum(a[..., 0], b[..., 0])
    ch = torch.maximum(a[..., 3], b[..., 3]) - torch.minimum(a[..., 1], b[..., 1])
    hull = (cw * ch).clamp_min(1e-7)
    return 1 - (iou - (hull - union) / hull)


def _group_slices() -> dict[str, slice]:
    out, s = {}, 0
    for name, n in TOKEN_GROUPS:
        out[name] = slice(s, s + n)
        s += n
    return out


def _aux_loss(tokens: torch.Tensor, tok_labels: torch.Tensor, video: bool) -> torch.Tensor:
    """Per-token attribute cross-entropies (groups: colour 9 | shape 7 | size 3 | change 2 | cell 10 | kind 4 |
    direction 5); colour's "none" class over every token, the others over the tokens they apply to."""
    tk = tokens.reshape(-1, tokens.shape[-1])
    lab = tok_labels.reshape(-1, tok_labels.shape[-1])
    sl = _group_slices()
    obj = lab[:, 3] >= 0 if not video else lab[:, 0] > 0   # tokens showing an object

    def ce(group, target, rows=None):
        x = tk[:, sl[group]]
        if rows is not None:
            if not rows.any():
                return tk.sum() * 0
            x, target = x[rows], target[rows]
        return F.cross_entropy(x, target)

    aux = ce("colour", lab[:, 0]) + ce("shape", lab[:, 1], obj)   # colour "none" = no object here
    if video:
        moving = lab[:, 2] > 0
        return aux + ce("change", lab[:, 2]) + ce("kind", lab[:, 4], moving) + ce("direction", lab[:, 5], moving)
    return aux + ce("size", lab[:, 2], obj) + ce("cell", lab[:, 4], obj)


def _loss(model, net, feats, tok_labels, texts, task, ans, box, itm, pool, video: bool):
    ids, mask = model.tokenize(texts)
    vis = net.embed_visual(feats.float(), video)
    te = model.text_embed(ids)
    h = net(te, mask, vis)
    o = net.heads_out(h, ids.shape[1], te, mask)
    losses = {}
    q = task == 0
    if q.any():
        losses["vqa"] = F.cross_entropy(o["vqa"][q], ans[q])
        has = pool.any(1) & q
        if has.any():
            lg = o["pool_logits"][has]
            losses["pool"] = POOL_W * (torch.logsumexp(lg, -1)
                                       - torch.logsumexp(lg.masked_fill(~pool[has], float("-inf")), -1)).mean()
    m = task == 2
    if m.any():
        losses["itm"] = F.binary_cross_entropy_with_logits(o["itm"][m], itm[m].float())
    g = task == 1
    if g.any() and not video:
        grid = int(net.cfg["image_grid"])
        out = o["ground"][g]                       # b×V×5
        tgt = box[g].float()                       # b×4 cxcywh
        col = (tgt[:, 0] * grid).long().clamp(0, grid - 1)
        row = (tgt[:, 1] * grid).long().clamp(0, grid - 1)
        losses["cell"] = F.cross_entropy(out[..., 0], row * grid + col)
        cells = torch.arange(grid * grid)
        near = (((cells[None] // grid) - row[:, None]).abs() <= 1) & (((cells[None] % grid) - col[:, None]).abs() <= 1)
        pred = decode_boxes(out, grid)             # b×V×4
        t = tgt[:, None].expand_as(pred)
        w = near.float()
        l1 = ((pred - t).abs().sum(-1) * w).sum() / w.sum()
        gi = (giou_loss(cxcywh_to_xyxy(pred), cxcywh_to_xyxy(t)) * w).sum() / w.sum()
        losses["box"] = 5 * l1 + 2 * gi
    if "tokens" in o:
        losses["aux"] = AUX_W * _aux_loss(o["tokens"], tok_labels, video)
    return losses
