"""Training recipe of ``builtin:tiny-vilt`` (``robustlab train tiny-vilt``), reproducible from ``--seed``.

One call, on CPU (``threads`` torch threads; ``robustlab train tiny-vilt --threads N``):

1. World: ``n_train`` (10,000) scenes (world seed 21, 128 px) and ``n_videos`` (6,000) event videos (world
   seed 22, 64 px, the 8 frames the model samples). Half of the videos (chosen by the seed) are used
   time-reversed — their frames in reverse order, their events swapped and inverted (``appears`` ↔
   ``disappears``, ``left`` ↔ ``right``) — so that order is learned from the pixels, not from how the world
   happens to start its videos. Held-out evaluation uses other seeds (1000 by default).
2. Frozen visual features, computed once: tiny-clip's trained CNN image tower (copied into tiny-vilt and
   frozen) gives an 8×8 grid per image and a 4×4 grid per sampled video frame (stage-3 ⊕ stage-4 features,
   384-d), each token with its raw 8×8×3 pixel patch (as in ViLT's patch embedding; frames at 32 px); video
   tokens also embed their difference from the previous sampled frame.
3. Every epoch draws fresh texts for every scene / video from its structure (:mod:`robustlab.datasets.synthetic.qa`):
   images — a VQA question, a referring expression with its box, or an ITM caption (half matched, half a hard
   negative with one attribute changed or another scene's caption) in the proportions :data:`IMAGE_MIX`;
   videos — a VQA question (85 %; temporal question types weighted up) or an ITM caption (15 %; negatives: the
   time-reversed caption or another video's caption).
4. Stage 0 (``pretrain_steps``, 1,000 by default, about a minute): the visual-token embedding (a small MLP
   over CNN features ⊕ pixel patch, the frame-difference map, positions) and the per-token attribute head
   learn what each token shows, without text or attention — cheap, and it gives the fusion layers tokens
   that already say colour, shape, size, place and change (:func:`pretrain_tokens`).
5. Losses: VQA cross-entropy over the fixed answer vocabulary; ITM binary cross-entropy; grounding:
   cross-entropy over the 64 cells for the cell of the target's centre, plus L1 (×5) and GIoU (×2) on the
   boxes decoded at that cell and its 8 neighbours. Two auxiliary losses make the visual tokens say what they
   show and the answer look where the question points (both from the world's structure, never from pixels):
   a per-token attribute loss (colour, shape, size and layout cell of the object covering the token; for
   video tokens colour, shape, "an object changes here since the previous sampled frame", the kind of change
   and its direction), and a pooling loss that puts the VQA
   head's attention pool on the tokens of the object the question names (for video questions: on the frames
   where that object changes). AdamW 1e-3, warm-up + cosine, image and video batches interleaved
   at random; batch 32, 5 epochs (stage 1).
6. Stage 2 (``answer_steps``, 1,500 by default, :func:`refine_answers`): with the fusion frozen, a fresh answer
   head that also reads two attention pools over the question's words trains on VQA alone, every before/after
   or first/last video question paired with its counterfactual (the word swapped, the answer that makes it
   true: :func:`robustlab.datasets.synthetic.qa.relation_flip`). Jointly trained heads left before/after at chance.
7. The checkpoint keeps the fusion transformer, heads and the CNN copy (the MiniLM word-embedding table is
   read from its package), with the config, the answer vocabulary, the recipe and the held-out figures
   (measured with :mod:`robustlab.tasks` on ``eval_n`` fresh items of the held-out split) in its metadata.

The package: :mod:`.labels` (per-token labels), :mod:`.data` (features and examples), :mod:`.losses`,
:mod:`.stages` (stages 0, 2 and 3) and :mod:`.recipe` (the whole run); every name is re-exported here.
"""
from __future__ import annotations

from robustlab.training.tiny_vilt.data import (  # noqa: F401
    IMAGE_MIX, PEELING_Q_P, PEELING_TYPE_P, SCENE_SEED, VIDEO_QTYPE_P, VIDEO_SEED, _cnn_features, _image_examples,
    _log, _video_examples, build_features,
)
from robustlab.training.tiny_vilt.labels import (  # noqa: F401
    COLOR_ID, DIR_ID, KIND_ID, POS_ID, SHAPE_ID, SIZE_ID, image_token_labels, reversed_view, video_token_labels,
)
from robustlab.training.tiny_vilt.losses import AUX_W, POOL_W, _aux_loss, _group_slices, _loss, giou_loss  # noqa: F401
from robustlab.training.tiny_vilt.recipe import JOINT_PAIRS, _heldout, _stage3_only, train_tiny_vilt  # noqa: F401
from robustlab.training.tiny_vilt.stages import (  # noqa: F401
    ANSWER_PATH, ANSWER_STEPS, QUESTION_POOLS, UNIQUENESS_DATA, UNIQUENESS_LR, UNIQUENESS_STEPS, _answer_loop,
    pretrain_tokens, refine_answers, refine_uniqueness,
)

__all__ = ["train_tiny_vilt", "build_features", "refine_answers", "refine_uniqueness", "giou_loss",
           "image_token_labels", "video_token_labels", "reversed_view"]
