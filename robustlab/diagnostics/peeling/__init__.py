"""PEELING: adversarial tests for visual grounding by image-aware property reduction.

Implemented from the paper (*Adversarial Testing for Visual Grounding via Image-Aware Property Reduction*, §III-§IV;
spec digest ``seeds_methods.md`` §4) -- no code of IMGAT/PEELING is reused. A referring expression often says more
than it needs to ("the small striped red circle at the top left" where "the circle" would do). PEELING

1. **P1, property reduction**: extracts the *object* and its *properties* (:class:`SpacyExtractor`, or an LLM
   through :class:`LLMExtractor`), recombines them into shorter candidates (:func:`candidates`) and keeps those a
   VQA model says are unique in *this* image (:func:`uniqueness`: three questions, AND logic);
2. **P2, semantically-equivalent perturbation** (:func:`p2_chain`): back-translation EN→DE→EN, one WordNet synonym,
   one keyboard typo;
3. grounds the result (``MRtext``) on the same image: IoU ≤ 0.5 to the original ground-truth box is an *issue*.
   ``MMI = (ACC_ori − ACC_adv) / ACC_ori`` (:func:`robustlab.metrics.mmi`).

:func:`peel` runs one example, :func:`peel_many` a dataset (batched: one VQA call and one grounding call per chunk
of items); :meth:`PeelingRun.summary` gives the metrics and :func:`export_tests` writes the paper's files.

Paper-vs-code choices (the digest's §7 rows 16-19 and what this module adds), all switchable through
:class:`PeelingConfig` (``PeelingConfig.released()`` collects the released code's behaviour):

* **Extraction.** The paper asks ChatGPT (10 in-context examples; the released prompt has 7, the first one
  mislabelled). The default here is offline: :class:`SpacyExtractor`, a dependency-parse rule set (head noun of the
  referring noun chunk = object; its adjectival / compound modifiers, prepositional phrases, relative clauses and
  participial modifiers = properties, each the original substring, in sentence order). Its two deliberate
  departures from the parse: a participial or relative clause that ends a prepositional phrase is taken as the
  object's own property (the paper's "Man in a car talking on a cellphone" → "in a car", "talking on a
  cellphone"), and a relative clause loses its relativiser and auxiliaries ("who is wearing a hat" → "wearing a
  hat", as in the paper's example 4). :class:`LLMExtractor` plugs any completion function into a prompt in the
  released JSON format with this module's own few-shot examples.
* **Plural objects** (:func:`looks_plural`): the released code skips objects whose string ends in "s"/"es" or
  contains "men"/"women" (so "bus" and "glass" are skipped too); the paper does not mention it. Default on
  (``skip_plural``), the released rule exactly.
* **Candidates.** The paper: the object alone (strategy 1) and the object with properties in their original order
  (strategy 2), never the full set. The released code: the object alone and the object + *one* property (which,
  with a single property, *is* the full set -- kept there). Default: object alone + object with one property,
  never the full set (so an expression with one property yields only the object); ``wide=True`` adds every proper
  subset (the paper's wording). The candidate has no article (released code; "a bird stands behind..." in the
  paper's text has one): ``keep_article=True`` puts the original determiner back in the grounded expression (the
  VQA questions always use the bare phrase, as the templates need).
* **Selection.** The released code asks the three questions for the object; if it is unique, every
  object+property candidate is kept *without* asking (a unique object stays unique when a property of it is
  added); otherwise each object+property candidate is asked. Default: that; ``check_all=True`` asks every
  candidate.
* **Templates.** The paper's ``"How many " + X + " in the image?"``, ``"Are there many " + X + " in the image?"``,
  ``"Is there a reflected " + X + " in the image?"``, in agreement by default: X's head noun in the plural where
  the question counts (:func:`robustlab.datasets.synthetic.qa.plural_phrase`): "How many rings are in the
  image?", "Are there many rings in the image?", "Is there a reflected ring in the image?" (tiny-vilt's stage 3
  trains on the same wording). ``compat=True`` asks the released strings: the paper's wording ("How many ring in
  the image?"), and the third template without the space before "in" ("...X" + "in the image?").
* **Answers.** The released code tests substrings ("one"/"1" in the count answer, "no" in the other two), so
  "someone" counts as one and "none"/"snow" as no. Default: token-level (a whole token "one" or "1"; a whole token
  "no"); ``compat=True`` restores the substring tests.
* **P2 order and levels.** Back-translation (nlpaug ``BackTranslationAug`` defaults: facebook/wmt19-en-de and
  -de-en), then synonyms, then one keyboard typo (nlpaug ``KeyboardAug(aug_char_max=1, aug_word_max=1)``, the other
  arguments nlpaug 1.1.11's defaults, run through :func:`robustlab.perturb.text.char.run_nlpaug`). Back-translation
  runs only when the WMT19 weights are in the local Hugging Face cache (the registry's ``back_translation``); else
  the stage is recorded as skipped with the registry's reason -- never faked. A callable can stand in
  (``back_translate=``).
* **Synonyms.** The paper replaces *one random word*; the released code replaces *every* token tagged
  NN/JJ(R/S)/VB(D/G/N/P/Z)/RB(R/S) by the first WordNet lemma whose phrase-bert cosine to the word exceeds 0.6 (or
  by the sole synonym when there is exactly one). Default ``synonym_mode="paper"``: one word, drawn with the seeded
  generator among the eligible tokens that have an acceptable synonym; ``"code"`` replaces all of them. The
  eligibility, the first-lemma rule, the 0.6 threshold and the sole-synonym rule are the released code's.
  phrase-bert is not available offline: the similarity is all-MiniLM-L6-v2 sentence-embedding cosine, a
  *substitute* named in every stage record (``synonym_scorer=None`` takes the first lemma unfiltered). The
  replacement is the lemma as WordNet spells it (no re-inflection, as in the released code). Unlike the released
  code, the candidates keep the word's sense: only lemmas of the word's most frequent WordNet sense of the tagged
  part of speech (``synonym_senses=1``) and never a morphological relative (``synonym_derived=False``), since
  every-sense lemmas drift ("ring" → "ringing", "star" → "superstar"); ``PeelingConfig.released()`` restores both.
* **Short expressions.** In the released code, expressions of ≤ 5 characters get only the synonym stage; so here
  (``short_len``, applied to the text entering P2).
* **Seeds.** Test ``k`` of expression ``r`` of item ``i`` gets ``seed_for(seed, 1000 * i + r, k)`` (recorded in the
  test); each P2 stage draws from its own generator
  ``default_rng([test_seed, stage])``, so switching one stage off does not change another's draws.
* **Metrics.** ``acc_original`` is the grounding accuracy (IoU > 0.5) on the original expressions of *all* items
  (the paper's ACC_ori is the model's accuracy on the whole test set) and ``mmi`` uses it; ``acc_original_tested``
  / ``mmi_tested`` restrict it to the items that produced at least one test. ``acc_reduced`` / ``mmi_reduced`` score
  the P1 output alone (the ablation of Table III, "without P2"). Where the dataset knows its world (the built-in
  scenes), ``oracle`` says how often the VQA verdict agrees with the truth (a candidate is truly unique when exactly
  one object of the scene, the target, has every attribute it names) and ``tests_valid`` is the share of tests whose
  reduced expression really singles out the target -- an automatic analogue of the paper's manual ATCR for P1.
* **Units.** An item here is one referring expression (an image with several expressions counts once per
  expression); the built-in datasets have one per image.

The module is a package by responsibility: :mod:`.extraction` (object and properties), :mod:`.candidates` (the
reduced expressions), :mod:`.uniqueness` (the three questions; the world's truth), :mod:`.p2` (the P2 chain),
:mod:`.records` (tests, items, configuration, metrics) and :mod:`.export_files` (the paper's files); the run
itself (:func:`peel`, :func:`peel_many`) is here, so that the :func:`vqa_function` it calls is this package's
attribute (replacing ``robustlab.diagnostics.peeling.vqa_function`` reaches the runs).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# the package's names, re-exported: ``from robustlab.diagnostics.peeling import X`` works for every X it ever had
from robustlab.diagnostics.peeling.atcr import (  # noqa: F401
    ATCR, LABELS, SAMPLE, Applied, apply_labels, atcr_rounds, compute_atcr, labels_document, labels_json,
    parse_atcr_labels, read_atcr_labels, sample_tests,
)
from robustlab.diagnostics.peeling.candidates import Candidate, determiner  # noqa: F401
from robustlab.diagnostics.peeling.export_files import (  # noqa: F401
    EXPORT_FORMATS, OFA_COLUMNS, PAPER_COLUMNS, export_tests, read_ofa_tsv,
)
from robustlab.diagnostics.peeling.extraction import (  # noqa: F401
    LLM_EXAMPLES, LLM_INSTRUCTION, Extraction, Extractor, LLMExtractor, SpacyExtractor, llm_prompt, looks_plural,
    parse_llm_answer,
)
from robustlab.diagnostics.peeling.extraction_eval import (  # noqa: F401
    MATCHES, PRF, ExtractionScore, Labelled, gold_labels, parse_labels, read_labels, score_extraction,
)
from robustlab.diagnostics.peeling.gold import GOLD, GOLD_NAME  # noqa: F401
from robustlab.diagnostics.peeling.p2 import (  # noqa: F401
    KEYBOARD_PARAMS, MINILM_SCORER, P2_STAGES, PHRASE_BERT, SHORT_LEN, SYNONYM_SENSES, SYNONYM_TAGS,
    SYNONYM_THRESHOLD, P2Result, StageRecord, back_translation_reason, is_derivation, minilm_similarity, p2_chain,
    seed_for, synonym_candidates, synonym_for,
)
from robustlab.diagnostics.peeling.records import (  # noqa: F401
    IOU_THRESHOLD, SKIP_REASONS, PeelingConfig, PeelingItem, PeelingRun, PeelingTest, _box, _config, _iou,
    summarize,
)
from robustlab.models.registry import load_model
from robustlab.tasks.conditions import perturb_one, perturb_text
from robustlab.tasks.task import Task
from robustlab.diagnostics.peeling.uniqueness import (  # noqa: F401
    CHUNK, QUERIES, RELEASED_TEMPLATES, TEMPLATES, Uniqueness, count_is_one, judge, questions_for, says_no,
    uniqueness_many, vqa_function, world_matches, world_valid,
)
# ``candidates`` and ``uniqueness`` are the modules, each callable as its function of the same name (so that
# ``import robustlab.diagnostics.peeling.candidates as C`` works too; issue 46)
from robustlab.diagnostics.peeling import candidates, uniqueness


# ============================================================================================ runs
@dataclass
class _Unit:
    item: int
    ref: int
    image_id: str
    image: Any
    text: str
    source_text: str
    box: tuple
    objects: Sequence | None = None
    target: int | None = None


def _ground_fn(model) -> Callable:
    if callable(getattr(model, "ground_batch", None)):
        return lambda ims, ts: model.ground_batch(list(ims), list(ts))
    if callable(getattr(model, "ground", None)):
        return lambda ims, ts: [model.ground(i, t) for i, t in zip(ims, ts)]
    raise ValueError(f"{getattr(model, 'model_id', type(model).__name__)} cannot ground expressions (no ground())")


def _run_units(model, units: list[_Unit], cfg: PeelingConfig, extractor: Extractor | None, vqa,
               progress: Callable[[int, int], None] | None = None, total: int | None = None,
               done: int = 0) -> tuple[list[PeelingTest], list[PeelingItem], int]:
    extractor = extractor or SpacyExtractor()
    ask = vqa_function(vqa if vqa is not None else model)
    ground = _ground_fn(model)
    # P1 steps 1-2: extraction and candidates
    plans = []
    for u in units:
        ex = extractor(u.text)
        if ex.empty:
            plans.append((u, ex, "extraction_empty", []))
        elif cfg.skip_plural and looks_plural(ex.object):
            plans.append((u, ex, "plural", []))
        else:
            plans.append((u, ex, "", candidates(ex, u.text, cfg.wide)))
    # P1 step 3: the object first, then (unless it is unique) the other candidates; one VQA call per chunk
    queries = 0
    first = [(k, p[3][0]) for k, p in enumerate(plans) if p[3]]
    verdicts: dict[tuple[int, int], tuple[Uniqueness, bool]] = {}
    res = uniqueness_many(ask, [plans[k][0].image for k, _ in first], [c.text for _, c in first], cfg.compat)
    queries += 3 * len(first)
    for (k, _), r in zip(first, res):
        verdicts[(k, 0)] = (r, True)
    second = []
    for k, p in enumerate(plans):
        if not p[3]:
            continue
        obj = verdicts[(k, 0)][0]
        for j in range(1, len(p[3])):
            if obj.unique and not cfg.check_all:
                verdicts[(k, j)] = (obj, False)  # a unique object stays unique with its own property added
            else:
                second.append((k, j))
    res = uniqueness_many(ask, [plans[k][0].image for k, _ in second], [plans[k][3][j].text for k, j in second],
                          cfg.compat)
    queries += 3 * len(second)
    for kj, r in zip(second, res):
        verdicts[kj] = (r, True)
    # P2 and the texts to ground: each item's original, each test's reduced and final expression
    g_images, g_texts, slots = [], [], []
    pending = []
    for k, (u, ex, status, cands) in enumerate(plans):
        g_images.append(u.image)
        g_texts.append(u.text)
        slots.append(("orig", k, None))
        sel = [j for j in range(len(cands)) if verdicts[(k, j)][0].unique]
        art = determiner(u.text) if cfg.keep_article else ""
        for n_t, j in enumerate(sel):
            c = cands[j]
            reduce_text = f"{art} {c.text}".strip() if art else c.text
            s = seed_for(cfg.seed, u.item * 1000 + u.ref, n_t)
            p2 = p2_chain(reduce_text, s, cfg.stages, synonym_mode=cfg.synonym_mode,
                          synonym_scorer=cfg.synonym_scorer, synonym_threshold=cfg.synonym_threshold,
                          short_len=cfg.short_len, synonym_senses=cfg.synonym_senses,
                          synonym_derived=cfg.synonym_derived)
            pending.append((k, j, n_t, reduce_text, p2, s))
            g_images += [u.image, u.image]
            g_texts += [reduce_text, p2.text]
            slots += [("reduce", len(pending) - 1, None), ("adv", len(pending) - 1, None)]
    boxes = []
    for s in range(0, len(g_texts), max(1, cfg.chunk)):
        boxes += list(ground(g_images[s:s + cfg.chunk], g_texts[s:s + cfg.chunk]))
    orig_b, red_b, adv_b = {}, {}, {}
    for (kind, idx, _), b in zip(slots, boxes):
        {"orig": orig_b, "reduce": red_b, "adv": adv_b}[kind][idx] = b
    by_item: dict[int, list[int]] = {}
    for pi, p in enumerate(pending):
        by_item.setdefault(p[0], []).append(pi)
    tests: list[PeelingTest] = []
    items: list[PeelingItem] = []
    for k, (u, ex, status, cands) in enumerate(plans):
        ob = orig_b[k]
        oiou = _iou(ob, u.box)
        judged = []
        for j, c in enumerate(cands):
            v, asked = verdicts[(k, j)]
            wv = world_valid(c.text, u.objects, u.target) if u.objects is not None and u.target is not None else None
            judged.append({"x": c.text, "strategy": c.strategy, "unique": v.unique, "asked": asked,
                           "world_valid": wv})
        mine = by_item.get(k, [])
        for pi in mine:
            _, j, n_t, reduce_text, p2, s = pending[pi]
            c = cands[j]
            v, asked = verdicts[(k, j)]
            ab, rb = adv_b[pi], red_b[pi]
            aiou, riou = _iou(ab, u.box), _iou(rb, u.box)
            tests.append(PeelingTest(
                uniq_id=f"{u.image_id}-{u.ref}-{n_t}", image_id=u.image_id, item=u.item, ref=u.ref, rawtext=u.text,
                Reducetext=reduce_text, MRtext=p2.text, region=_box(u.box), pred_box=_box(ab), iou=round(aiou, 6),
                issue=bool(aiou <= IOU_THRESHOLD), reduce_box=_box(rb), reduce_iou=round(riou, 6),
                orig_box=_box(ob), orig_iou=round(oiou, 6), strategy=c.strategy, properties=list(c.properties),
                uniqueness={**v.to_dict(), "asked": asked}, asked=asked, world_valid=judged[j]["world_valid"],
                stages=[st.to_dict() for st in p2.stages], seed=s, source_text=u.source_text))
        if not status:
            status = "tested" if mine else "no_unique_candidate"
        items.append(PeelingItem(item=u.item, ref=u.ref, image_id=u.image_id, rawtext=u.text, status=status,
                                 extraction=ex.to_dict(), judged=judged, n_tests=len(mine), orig_box=_box(ob),
                                 orig_iou=round(oiou, 6), region=_box(u.box)))
    if progress:
        progress(done + len(units), total if total is not None else done + len(units))
    return tests, items, queries


def peel(model, image, expression: str, box, *, config: PeelingConfig | None = None,
         extractor: Extractor | None = None, vqa_model=None, objects: Sequence | None = None,
         target: int | None = None, image_id: str = "0", **overrides) -> PeelingRun:
    """PEELING on one (image, expression, ground-truth box): the tests it generates and how ``model`` grounds them.

    ``model`` grounds (``ground``/``ground_batch``) and, unless ``vqa_model`` is given, also answers the uniqueness
    questions (``vqa``/``vqa_batch``). ``objects``/``target``: the world's truth, when known. Options: the fields
    of :class:`PeelingConfig` (``compat``, ``wide``, ``stages``, ``seed``...)."""
    cfg = _config(config, overrides)
    u = _Unit(0, 0, str(image_id), image, str(expression), str(expression), tuple(box), objects, target)
    tests, items, q = _run_units(model, [u], cfg, extractor, vqa_model)
    return PeelingRun(tests, items, cfg, image_of=lambda i: image, vqa_queries=q,
                      extractor=getattr(extractor, "source", "spacy") if extractor else "spacy")


def peel_many(model, dataset, n: int | None = None, *, config: PeelingConfig | None = None,
              extractor: Extractor | None = None, vqa_model=None,
              image_fn: Callable[[int], Any] | None = None, text_fn: Callable[[str, int], str] | None = None,
              progress: Callable[[int, int], None] | None = None, **overrides) -> PeelingRun:
    """PEELING on the first ``n`` items (all by default) of a grounding dataset, batched by ``config.chunk`` items.

    ``image_fn(i)`` / ``text_fn(expression, i)`` replace item ``i``'s image / expression before PEELING (the task's
    visual and text conditions); by default the dataset's own. The built-in scenes' world truth
    (``dataset.scene(i).objects`` and ``Ref.meta["target"]``) feeds the oracle metrics."""
    cfg = _config(config, overrides)
    m = len(dataset) if n is None else min(int(n), len(dataset))
    if m < 1:
        raise ValueError("n must be at least 1")
    image_fn = image_fn or dataset.visual
    scene = getattr(dataset, "scene", None)
    tests: list[PeelingTest] = []
    items: list[PeelingItem] = []
    queries = 0
    for s in range(0, m, max(1, cfg.chunk)):
        units = []
        for i in range(s, min(s + cfg.chunk, m)):
            it = dataset.item(i)
            if not it.refs:
                continue
            im = image_fn(i)
            objs = None
            if callable(scene):
                try:
                    objs = scene(i).objects
                except (AttributeError, IndexError, KeyError, TypeError, ValueError):  # no world truth here
                    objs = None
            for r, ref in enumerate(it.refs):
                text = text_fn(ref.expression, i) if text_fn else ref.expression
                tgt = (ref.meta or {}).get("target")
                units.append(_Unit(i, r, str(getattr(it, "id", i)), im, text, ref.expression, tuple(ref.box),
                                   objs if tgt is not None else None, tgt))
        if units:
            t, its, q = _run_units(model, units, cfg, extractor, vqa_model, progress, m, s)
            tests += t
            items += its
            queries += q
        elif progress:
            progress(min(s + cfg.chunk, m), m)
    if not items:
        raise ValueError(f"dataset {getattr(dataset, 'name', dataset)} has no referring expressions in its first "
                         f"{m} items")
    return PeelingRun(tests, items, cfg, image_of=image_fn, vqa_queries=queries,
                      extractor=getattr(extractor, "source", "spacy") if extractor else "spacy")


# ---- the PEELING task: a task of this (diagnostics) layer, registered in the task registry on import -------------
# (the sweeps, the CLI and the dashboard import this package; so does a notebook that uses PEELING)
EXAMPLES = 10  # tests kept in the Result's extra (the full list: robustlab.diagnostics.peeling.peel_many)


class PeelingTask(Task):
    name = "peeling"
    takes_interventions = True
    description = ("PEELING adversarial grounding tests: property-reduced expressions checked by VQA, then P2 "
                   "rewrites; accuracy on original vs adversarial expressions and MMI")
    needs = ("vqa", "ground")
    kinds = ("image",)
    alternative = "builtin:tiny-vilt"
    options = {"vqa_model": "the model that answers the uniqueness questions (default: the grounding model)",
               "compat": "the released code's substring answer parsing and template strings (default false)",
               "wide": "every proper subset of the properties as a candidate (the paper's wording; default false)",
               "skip_plural": "skip plural objects, the released rule (default true)",
               "check_all": "ask the uniqueness questions for every candidate (default false)",
               "keep_article": "put the original determiner back into the reduced expression (default false)",
               "stages": "the P2 stages, comma-separated: back_translation,synonym,keyboard",
               "synonym_mode": "paper (one word) or code (every eligible word)",
               "synonym_threshold": "the synonym's minimum similarity (default 0.6)",
               "synonym_senses": "WordNet senses a synonym may come from, most frequent first (default 1; 0 = all)",
               "synonym_derived": "allow morphological relatives as synonyms, e.g. ring -> ringing (default false)",
               "short_len": "expressions this short get only the synonym stage (default 5)",
               "seed": "the tests' base seed (default 0)", "chunk": "items per batched model call"}

    def check_dataset(self, dataset) -> None:
        """Any image dataset with referring expressions (one that lists "peeling" or "grounding")."""
        if dataset.kind not in self.kinds:
            raise ValueError(f"{self.name} runs on images; dataset {dataset.name} has {dataset.kind}s")
        tasks = getattr(dataset, "tasks", ())
        if "peeling" not in tasks and "grounding" not in tasks:
            raise ValueError(f"dataset {dataset.name} has no referring expressions for {self.name} (its items "
                             f"support {', '.join(tasks) or 'nothing'})")

    def run(self, model, dataset, vc, tc, m, progress, **options):
        vqa_model = options.pop("vqa_model", None)
        if isinstance(vqa_model, str):
            vqa_model = load_model(vqa_model)
        extractor = options.pop("extractor", None)
        image_fn = None if vc.clean else (lambda i: perturb_one(dataset.visual(i), vc, i, "image"))
        text_fn = None if tc.clean else (lambda e, i: perturb_text(e, tc, i))
        run = peel_many(model, dataset, m, extractor=extractor, vqa_model=vqa_model, image_fn=image_fn,
                        text_fn=text_fn, progress=progress, **options)
        summary = run.summary()
        reasons = summary.pop("p2_skip_reasons", {})
        extra = {"tests": len(run.tests), "config": run.config.to_dict(), "extractor": run.extractor,
                 "p2_skip_reasons": reasons,
                 "vqa_model": getattr(vqa_model, "model_id", None),
                 "examples": [_example(t) for t in run.tests[:EXAMPLES]]}
        return m, summary, extra


def _example(t) -> dict:
    return {k: getattr(t, k) for k in ("uniq_id", "image_id", "rawtext", "Reducetext", "MRtext", "region",
                                       "pred_box", "iou", "issue", "reduce_iou", "orig_iou", "seed")}


TASK = PeelingTask()  # its entry in the task table (robustlab.ABOVE["tasks"])


__all__ = ["PeelingTask", "TASK",
    "IOU_THRESHOLD",
    "LLM_EXAMPLES",
    "OFA_COLUMNS",
    "P2_STAGES",
    "PAPER_COLUMNS",
    "QUERIES",
    "RELEASED_TEMPLATES",
    "TEMPLATES",
    "Candidate",
    "Extraction",
    "Extractor",
    "LLMExtractor",
    "P2Result",
    "PeelingConfig",
    "PeelingItem",
    "PeelingRun",
    "PeelingTest",
    "SpacyExtractor",
    "StageRecord",
    "Uniqueness",
    "back_translation_reason",
    "candidates",
    "count_is_one",
    "determiner",
    "export_tests",
    "judge",
    "llm_prompt",
    "looks_plural",
    "minilm_similarity",
    "p2_chain",
    "parse_llm_answer",
    "peel",
    "peel_many",
    "questions_for",
    "read_ofa_tsv",
    "says_no",
    "seed_for",
    "summarize",
    "synonym_for",
    "synonym_candidates",
    "GOLD",
    "ExtractionScore",
    "Labelled",
    "PRF",
    "gold_labels",
    "parse_labels",
    "read_labels",
    "score_extraction",
    "ATCR",
    "apply_labels",
    "atcr_rounds",
    "compute_atcr",
    "labels_document",
    "labels_json",
    "parse_atcr_labels",
    "read_atcr_labels",
    "sample_tests",
    "is_derivation",
    "uniqueness",
    "uniqueness_many",
    "vqa_function",
    "world_matches",
    "world_valid",
]
