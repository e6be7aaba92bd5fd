"""The shipped protocols against the papers' tables (../shared/research/seeds_perturbations.md sections 1.2, 1.3,
2.1, 2.2; seeds_methods.md sections 3.2-3.3): every perturbation's resolved parameters at every severity, category
membership and counts, combinations; plus loading, validation, overrides and the CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from robustlab.bench.protocol import ProtocolError, condition_rows, dry_run_lines, load_protocol, shipped
from robustlab.perturb.condition import Condition

SEV = (1, 2, 3, 4, 5)

# ---- Schiappa et al. video table (digest 1.2): perturbation -> the paper's value at s1..s5 (one key per operator)
SCHIAPPA_VIDEO = {
    "gaussian_noise": ("sigma", (.08, .12, .18, .26, .38)),
    "shot_noise/schiappa_video": ("lam", (250, 100, 50, 30, 15)),
    "impulse_noise": ("amount", (.03, .06, .09, .17, .27)),
    "speckle_noise/schiappa_video": ("sigma", (.15, .20, .25, .30, .35)),
    "defocus_blur": (("radius", "alias_blur"), ((3, .1), (4, .5), (6, .5), (8, .5), (10, .5))),
    "motion_blur": (("radius", "sigma"), ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))),
    "zoom_blur": (("zoom_stop", "zoom_step"), ((1.11, .01), (1.16, .01), (1.21, .02), (1.26, .02), (1.31, .03))),
    "static_rotate": ("angle", (7.5, 15, 30, 45, 90)),
    "rotate/offline": ("max_angle", (6, 12, 18, 24, 30)),
    "translate/schiappa_offline": ("max_offset", (7, 15, 23, 31, 39)),
    "jpeg_compression": ("quality", (25, 18, 15, 10, 7)),
    "codec1/mpeg2video": ("qscale", (20, 40, 60, 80, 100)),
    "codec2/mpeg4": ("qscale", (15, 30, 45, 60, 75)),
    "sampling": ("rate", (2, 4, 8, 16, 32)),
    "reverse_sampling": ("rate", (2, 4, 8, 16, 32)),
    "jumble/offline": ("segment", (4, 8, 16, 32, 64)),
    "box_jumble/offline": ("segment", (2, 4, 8, 16, 32)),
    "freeze/offline": ("fraction", (.4, .2, .1, .05, .1)),
}
SCHIAPPA_VIDEO_CATEGORIES = {"Noise": 4, "Blur": 3, "Camera": 3, "Digital": 3, "Temporal": 5}
SCHIAPPA_TEXT = {  # category -> (JSON keys of the released perturbations.json, as robustlab names them)
    "ChangeChar": {"keyboard", "ocr", "spelling_error", "typos", "punctuation", "prefix_swap"},
    "AddText": {"append_irr", "insert_adv"},
    "SwapText": {"mlm_suggestion", "back_translation", "multi_pos_swap_jj", "multi_pos_swap_nn",
                 "swap_syn_word_embedding", "swap_syn_wordnet"},
    "TextStyle": {"passive", "formal", "casual", "tense", "reverse_neg"},
    "Bias": {"gender_swap", "gender_male", "gender_female", "gender_neutral"},
    "DropText": {"no_nouns", "no_verbs", "no_nouns_and_no_verbs", "only_nouns", "only_verbs",
                 "only_nouns_and_only_verbs", "random_noun", "random_verb"},
    "Positional": {"drop_first", "drop_last", "drop_first_and_last", "shuffle_order"},
}
SCHIAPPA_TYPES = {"natural": 17, "machine": 4, "synthetic": 14}
SCHIAPPA_PAIRS_VISUAL = {"box_jumble", "jumble", "defocus_blur", "jpeg_compression", "shot_noise", "static_rotate"}
SCHIAPPA_PAIRS_TEXT = {"append_irr", "gender_female", "gender_male", "gender_swap", "mlm_suggestion",
                       "multi_pos_swap_nn", "no_nouns_and_no_verbs", "no_verbs", "random_noun", "shuffle_order",
                       "spelling_error"}

# ---- Qiu et al. image table (digest 1.3)
QIU_IMAGE = {
    "gaussian_noise": ("sigma", (.08, .12, .18, .26, .38)),
    "shot_noise": ("lam", (60, 25, 12, 5, 3)),
    "impulse_noise": ("amount", (.03, .06, .09, .17, .27)),
    "speckle_noise": ("sigma", (.15, .20, .35, .45, .60)),
    "defocus_blur": (("radius", "alias_blur"), ((3, .1), (4, .5), (6, .5), (8, .5), (10, .5))),
    "glass_blur": (("sigma", "max_delta", "iterations"), ((.7, 1, 2), (.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2))),
    "motion_blur": (("radius", "sigma"), ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))),
    "zoom_blur": (("zoom_stop", "zoom_step"), ((1.11, .01), (1.16, .01), (1.21, .02), (1.26, .02), (1.31, .03))),
    "snow": (("loc", "scale", "zoom", "threshold", "radius", "sigma", "blend"),
             ((.1, .3, 3, .5, 10, 4, .8), (.2, .3, 2, .5, 12, 4, .7), (.55, .3, 4, .9, 12, 8, .7),
              (.55, .3, 4.5, .85, 12, 8, .65), (.55, .3, 2.5, .85, 12, 12, .55))),
    "frost": (("img_weight", "frost_weight"), ((1, .4), (.8, .6), (.7, .7), (.65, .7), (.6, .75))),
    "fog": (("strength", "wibble_decay"), ((1.5, 2), (2, 2), (2.5, 1.7), (2.5, 1.5), (3, 1.4))),
    "brightness": ("delta_v", (.1, .2, .3, .4, .5)),
    "contrast": ("factor", (.4, .3, .2, .1, .05)),
    "elastic_transform": (("alpha", "sigma", "affine"),
                          ((488, 170.8, 24.4), (488, 19.52, 48.8), (12.2, 2.44, 4.88), (17.08, 2.44, 4.88),
                           (29.28, 2.44, 4.88))),
    "pixelate": ("scale", (.6, .5, .4, .3, .25)),
    "jpeg_compression": ("quality", (25, 18, 15, 10, 7)),
    "stylize/qiu_code": ("alpha", (.2, .4, .6, .8, 1.0)),
}
QIU_IMAGE_CATEGORIES = {"Noise": 4, "Blur": 4, "Weather": 4, "Digital": 4, "Stylize": 1}
QIU_LEVELS = (.15, .20, .25, .30, .35)

# ---- MLVP (seeds_methods 3.2, Table 37 + 3.3)
MLVP_VIDEO = {
    "mlvp_gaussian_noise": ("sigma", (.08, .12, .18, .26, .38)),
    "mlvp_impulse_noise": ("amount", (.03, .06, .09, .17, .27)),
    "mlvp_h264": ("bitrate", (500_000, 250_000, 100_000, 50_000, 25_000)),
    "mlvp_motion_blur/paper": (("short", "long"), ((5, 9), (7, 13), (9, 17), (11, 21), (13, 25))),
    "mlvp_defocus": ("radius", (3, 4, 6, 8, 10)),
    "mlvp_occlusion/paper": ("ratio", (.3, .4, .5, .6, .8)),
    "mlvp_event_insertion/paper": ("ratio", (.3, .4, .5, .6, .7)),
}
MLVP_LEVELS = {"Low": {"mlvp_gaussian_noise", "mlvp_impulse_noise", "mlvp_fog", "mlvp_snow", "mlvp_elastic",
                       "mlvp_h264"},
               "Mid": {"mlvp_motion_blur", "mlvp_defocus", "mlvp_occlusion"},
               "High": {"mlvp_style", "mlvp_event_insertion", "mlvp_temporal_scrambling"}}


def _values(params: dict, key):
    return tuple(params[k] for k in key) if isinstance(key, tuple) else params[key]


def _check_table(protocol, axis, table):
    entries = {e.spec: e for e in protocol.entries(axis)}
    checked = 0
    for name, (key, values) in table.items():
        e = entries[name]
        assert e.severities == SEV, name
        for s, want in zip(SEV, values):
            got = _values(e.params(s), key)
            assert got == pytest.approx(want), f"{name} s{s}: {got} != {want}"
            checked += 1
    return checked


def test_every_shipped_protocol_loads_and_validates():
    names = shipped()
    for n in ("msrvtt-p", "youcook2-p", "qiu-image", "qiu-text", "mlvp", "quag-table1", "clavi", "peeling", "hat-vtr"):
        assert n in names
        p = load_protocol(n)
        assert p.name == n and p.title and p.paper and p.data["tasks"]


def test_msrvtt_p_video_parameters_equal_schiappa_table():
    p = load_protocol("msrvtt-p")
    assert _check_table(p, "visual", SCHIAPPA_VIDEO) == 18 * 5
    cats = p.categories("visual")
    assert {c: len(m) for c, m in cats.items()} == SCHIAPPA_VIDEO_CATEGORIES
    assert sum(len(e.severities) for e in p.entries("visual")) == 90


def test_msrvtt_p_text_35_in_7_categories_and_3_types():
    p = load_protocol("msrvtt-p")
    text = p.entries("text")
    assert len(text) == 35
    got = {c: {m.split("/")[0] for m in members} for c, members in p.categories("text").items()}
    assert got == SCHIAPPA_TEXT
    assert {t: len(m) for t, m in p.types("text").items()} == SCHIAPPA_TYPES
    # one level each: the registry's severity 3 is the paper's level for every one of them
    assert {e.severities for e in text} == {(3,)}
    for e in text:
        if e.available:
            params = e.params(3)
            assert params.get("paper_level", 3) in (1, 3), e.spec
    # the variants are Schiappa's (TextFlint), not Qiu's nlpaug ones
    assert {e.spec for e in text if e.name in ("keyboard", "ocr")} == {"keyboard/schiappa_textflint",
                                                                         "ocr/schiappa_textflint"}


def test_msrvtt_p_66_pairs_at_severity_3_and_youcook2_drops_bias():
    p = load_protocol("msrvtt-p")
    pairs = p.pairs()
    assert len(pairs) == 66
    assert {v.name for v, _ in pairs} == SCHIAPPA_PAIRS_VISUAL and {t.name for _, t in pairs} == SCHIAPPA_PAIRS_TEXT
    assert p.data["combine"]["visual_severity"] == 3
    y = load_protocol("youcook2-p")
    assert len(y.entries("text")) == 31 and "Bias" not in y.categories("text")
    assert len(y.pairs()) == 6 * 8
    assert _check_table(y, "visual", SCHIAPPA_VIDEO) == 90
    assert y.dataset["name"] == "youcook2" and y.report["headline"] == "R@5"


def test_msrvtt_p_spec_runs_each_paper_cell_once():
    p = load_protocol("msrvtt-p")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 8})
    n_avail_text = sum(e.available for e in p.entries("text"))
    n_pairs = sum(v.available and t.available for v, t in p.pairs())
    assert len(spec.conditions) == 1 + 90 + n_avail_text + n_pairs
    vis = [c["visual"] for c in spec.conditions if set(c) == {"visual"}]
    shot = [c for c in vis if c.name == "shot_noise"]
    assert [c.variant for c in shot] == ["schiappa_video"] * 5
    assert spec.directions == ["t2v"] and spec.name == "msrvtt-p"
    assert spec.protocol["name"] == "msrvtt-p"
    assert {x["perturbation"] for x in spec.protocol["not_run"]} == {e.spec for e in p.entries() if not e.available}
    both = [c for c in spec.conditions if set(c) == {"visual", "text"}]
    assert {c["visual"].severity for c in both} == {3}
    # the protocol travels in spec.json
    again = type(spec).from_json(json.loads(json.dumps(spec.to_json())))
    assert again.protocol["name"] == "msrvtt-p" and again.conditions == spec.conditions


def test_qiu_image_parameters_and_categories():
    p = load_protocol("qiu-image")
    assert _check_table(p, "visual", QIU_IMAGE) == 17 * 5
    assert {c: len(m) for c, m in p.categories("visual").items()} == QIU_IMAGE_CATEGORIES
    assert p.report["headline"] == "RSUM" and p.data["directions"] == ["i2t", "t2i"]


def test_qiu_text_16_types_60_variants():
    p = load_protocol("qiu-text")
    text = p.entries("text")
    assert len(text) == 16 and not p.entries("visual")
    assert sum(len(e.severities) for e in text) == 60
    for e in text:
        if e.level == "character":
            assert [e.params(s)["aug_word_p"] for s in SEV] == pytest.approx(QIU_LEVELS), e.spec
        elif e.level == "word":
            assert [e.params(s)["level"] for s in SEV] == pytest.approx(QIU_LEVELS), e.spec
        else:
            assert e.level == "sentence" and len(e.severities) == 1
    assert {c: len(m) for c, m in p.categories("text").items()} == {"Character": 6, "Word": 5, "Sentence": 5}


def test_mlvp_parameters_levels_and_text_settings():
    p = load_protocol("mlvp")
    assert len(p.entries("visual")) == 12 and sum(len(e.severities) for e in p.entries("visual")) == 60
    _check_table(p, "visual", MLVP_VIDEO)
    assert {c: {m.split("/")[0] for m in ms} for c, ms in p.categories("visual").items()} == MLVP_LEVELS
    text = p.entries("text")
    assert len(text) == 15 and {e.variant for e in text} == {"mlvp"}
    for e in text:  # MLVP's one level per family, whatever the severity
        if e.level == "character":
            assert [e.params(s)["aug_word_p"] for s in SEV] == pytest.approx([0.35] * 5), e.spec
        elif e.level == "word":
            assert [e.params(s)["level"] for s in SEV] == pytest.approx([0.10] * 5), e.spec
            # the MLVP paper says nothing about removal: its code's last attempt is kept (issue 48)
            assert e.params(3)["gate_threshold"] == 0.9 and e.params(3)["gate_on_failure"].startswith("keep last")
    # Qiu-TP's gated word perturbations drop a sample no attempt passes, as Qiu et al.'s App. 5.3 says
    for e in load_protocol("qiu-text").entries("text"):
        if e.variant == "qiu_gated":
            assert e.params(3)["gate_on_failure"] == "drop", e.spec


def test_hat_vtr_adapts_every_shift_and_quag_lists_table1():
    spec = load_protocol("hat-vtr").build_spec(dataset={"name": "builtin-videos", "n": 8})
    shifted = [c for c in spec.conditions if c and "adapt" not in c]
    adapted = [c for c in spec.conditions if "adapt" in c]
    # the paper's five baselines (Tent, READ, SAR, EATA, TCR), HAT-VTR and the oracle (issue 48)
    assert {c["adapt"].name for c in adapted} == {"tent", "read", "sar", "eata", "tcr", "hat-vtr", "oracle"}
    assert len(adapted) == 7 * len(shifted)
    assert {c["visual"].severity for c in shifted if "visual" in c} == {5}
    q = load_protocol("quag-table1").build_spec()
    assert len(q.conditions) == 1 + 9 and q.tasks == ["vqa"]


def test_overrides_keep_the_protocols_variants_and_categories():
    p = load_protocol("msrvtt-p")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 8}, perturbations="shot_noise/schiappa_video",
                        text_perturbations="none", severities="1,5", combine="none", models=["builtin:tiny-clip"])
    assert [c["visual"].label() for c in spec.conditions[1:]] == ["shot_noise/schiappa_video s1",
                                                                   "shot_noise/schiappa_video s5"]
    assert spec.models == ["builtin:tiny-clip"]
    lines = dry_run_lines(spec, p)
    assert any('shot_noise/schiappa_video s5 [Noise] {"lam":15}' in ln for ln in lines)


def test_a_users_protocol_file_and_bad_files(tmp_path: Path):
    good = tmp_path / "mine.toml"
    good.write_text('schema = 1\nname = "mine"\ntitle = "t"\npaper = "p"\ntasks = ["retrieval"]\n'
                    '[dataset]\nname = "builtin"\n[[visual]]\ncategory = "Noise"\n'
                    'perturbations = ["shot_noise/schiappa_video"]\nseverities = [2]\n')
    p = load_protocol(str(good))
    assert [e.params(2) for e in p.entries()] == [{"lam": 100}]
    bad = {
        "typo.toml": ('schema = 1\nname = "x"\ntitle = "t"\npaper = "p"\ntasks = ["retrieval"]\n'
                      '[dataset]\nname = "builtin"\n[[visual]]\ncategory = "N"\nperturbations = ["shot_noise/nope"]\n',
                      "unknown variant 'nope'"),
        "sev.toml": ('schema = 1\nname = "x"\ntitle = "t"\npaper = "p"\ntasks = ["retrieval"]\n'
                     '[dataset]\nname = "builtin"\n[[visual]]\ncategory = "N"\nperturbations = ["shot_noise"]\n'
                     'severities = [7]\n', "visual.0.severities.0"),
        "extra.toml": ('schema = 1\nname = "x"\ntitle = "t"\npaper = "p"\ntasks = ["retrieval"]\nbogus = 1\n'
                       '[dataset]\nname = "builtin"\n', "bogus"),
        "axis.toml": ('schema = 1\nname = "x"\ntitle = "t"\npaper = "p"\ntasks = ["retrieval"]\n'
                      '[dataset]\nname = "builtin"\n[[text]]\ncategory = "N"\nperturbations = ["shot_noise"]\n',
                      "listed under text"),
        "broken.toml": ("schema = 1\nname = [\n", "not valid TOML"),
        "cycle.json": (json.dumps({"schema": 1, "name": "x", "extends": "x"}), "a cycle"),
    }
    for fname, (text, want) in bad.items():
        f = tmp_path / fname
        f.write_text(text)
        with pytest.raises(ProtocolError, match=None) as ei:
            load_protocol(str(f))
        assert want in str(ei.value) and "\n" not in str(ei.value), (fname, str(ei.value))
    with pytest.raises(ProtocolError, match="unknown protocol"):
        load_protocol("no-such")
    with pytest.raises(ProtocolError, match="unknown protocol"):  # the dashboard: shipped names only
        load_protocol(str(good), allow_files=False)


def test_variants_everywhere_in_the_python_api():
    c = Condition("shot_noise/schiappa_video", 3)
    assert (c.name, c.variant, c.label()) == ("shot_noise", "schiappa_video", "shot_noise/schiappa_video s3")
    assert Condition.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="also given"):
        Condition("shot_noise/schiappa_video", 3, variant="imagenet_c")


def test_cli_protocols_and_dry_run(capsys):
    from robustlab.cli import main

    assert main(["protocols"]) == 0
    out = capsys.readouterr().out
    assert "msrvtt-p" in out and "35 text in 7 categories" in out and "66 pairs" in out
    assert main(["bench", "--protocol", "msrvtt-p", "--dry-run"]) == 0
    out = capsys.readouterr().out
    p = load_protocol("msrvtt-p")
    n = 1 + 90 + sum(e.available for e in p.entries("text")) + sum(v.available and t.available for v, t in p.pairs())
    models = p.data["models"]  # the ViT family first, then the CNN built-ins (issue 27)
    assert models[:2] == ["builtin:tiny-vit-clip-video-seqtransf", "builtin:tiny-vit-clip-video-meanp"]
    assert f"{n} condition sets × {len(models)} model(s) × 1 task(s)" in out
    assert 'visual shot_noise/schiappa_video s3 [Noise] {"lam":50}' in out
    assert "[ChangeChar/natural]" in out and "not run here" in out
    assert main(["bench", "--protocol", "no-such", "--dry-run"]) != 0
    err = capsys.readouterr().err
    assert "unknown protocol" in err and "Traceback" not in err
    assert main(["bench", "--perturbations", "shot_noise/schiappa_video", "--models", "builtin:tiny-clip-video-meanp",
                 "--dataset", "builtin-videos", "--n", "4", "--severities", "3", "--dry-run"]) == 0
    assert '{"lam":50}' in capsys.readouterr().out


def test_eval_takes_a_variant_and_the_result_names_it(capsys):
    from robustlab.cli import main

    assert main(["eval", "retrieval", "--model", "builtin:tiny-clip", "--n", "8", "--perturb", "zoom_blur/qiu_code",
                 "--severity", "5", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["conditions"]["visual"] == {"name": "zoom_blur", "severity": 5, "seed": 0, "variant": "qiu_code"}
    assert main(["eval", "retrieval", "--model", "builtin:tiny-clip", "--n", "8", "--perturb", "zoom_blur/nope"]) != 0
    err = capsys.readouterr().err
    assert "unknown variant 'nope'" in err and "Traceback" not in err


def test_mlvp_mixed_settings_tables_17_18():
    p = load_protocol("mlvp")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 10})
    mixed = [c["visual"] for c in spec.conditions if "visual" in c and c["visual"].mix is not None]
    per_type = [c for c in mixed if c.mix.severities and not c.mix.types]
    fractions = sorted(c.mix.fraction for c in mixed if c.mix.types)
    runnable = [e for e in p.entries("visual") if e.available]
    assert len(per_type) == len(runnable) and {c.mix.severities for c in per_type} == {(1, 2, 3, 4, 5)}
    assert fractions == [0.2, 0.4, 0.6, 0.8]
    assert all(set(c.mix.types) == {e.spec for e in runnable} for c in mixed if c.mix.types)
    rows = [r for r in condition_rows(spec, p) if r["parts"] and r["parts"][0]["category"] == "mixed"]
    assert len(rows) == len(mixed)
    hat = load_protocol("hat-vtr").build_spec(dataset={"name": "builtin-videos", "n": 10})
    adapted_mixes = [c for c in hat.conditions if "adapt" in c and "visual" in c and c["visual"].mix is not None]
    assert len(adapted_mixes) == 7 * len([c for c in hat.conditions if "adapt" not in c and "visual" in c
                                          and c["visual"].mix is not None])
