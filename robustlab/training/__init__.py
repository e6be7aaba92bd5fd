"""Recipes of the built-in models, each trained offline on the synthetic world (``robustlab train NAME``):
``tiny_clip`` (image-text), ``tiny_clip_video`` (text-video, meanP and seqTransf), ``tiny_vit_clip`` (the LayerNorm
ViT family: image-text, then text-video over its frozen trunk), ``tiny_vilt`` (fusion)."""

# recipe name -> "module:function"; each takes (out, seed, n_train, epochs, eval_n[, threads]) keywords
RECIPES = {
    "tiny-clip": "robustlab.training.tiny_clip:train_tiny_clip",
    "tiny-clip-video": "robustlab.training.tiny_clip_video:train_tiny_clip_video",
    "tiny-vit-clip": "robustlab.training.tiny_vit_clip:train_tiny_vit_clip",
    "tiny-vit-clip-video": "robustlab.training.tiny_vit_clip:train_tiny_vit_clip_video",
    "tiny-vilt": "robustlab.training.tiny_vilt:train_tiny_vilt",
}
