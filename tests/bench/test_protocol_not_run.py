"""Issue 48: a protocol says what of its paper it does not express, and why; nothing is dropped in silence."""
from robustlab.bench.protocol import dry_run_lines, load_protocol


def test_hat_vtr_lists_the_sentence_shifts_and_the_query_gallery_tables_as_not_run():
    p = load_protocol("hat-vtr")
    nr = {x["perturbation"]: x for x in p.not_run()}
    for s in ("back_translation/mlvp", "formal/mlvp", "casual/mlvp", "passive/mlvp", "active/mlvp"):
        assert nr[s]["axis"] == "text" and nr[s]["category"] == "Sentence" and "weights" in nr[s]["reason"], s
    qgs = sorted(x["perturbation"] for x in nr.values() if x["category"] == "QGS")
    assert qgs == ["query-gallery shift, cross-dataset (Table 4)", "query-gallery shift, zero-shot CLIP (Table 5)"]
    assert all(nr[q]["axis"] == "setting" and "needs" in nr[q]["reason"] for q in qgs)
    assert "Tables 1-3" in p.title
    text = "\n".join(dry_run_lines(p.build_spec(dataset={"name": "builtin-videos", "n": 4}), p))
    assert "query-gallery shift, zero-shot CLIP (Table 5)" in text and "back_translation/mlvp" in text


def test_a_protocol_file_may_list_what_it_does_not_express(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('schema = 1\nname = "mine"\nextends = "qiu-image"\n\n[[not_run]]\nperturbation = "Table 9"\n'
                 'reason = "needs the paper\'s private data"\n')
    p = load_protocol(str(f))
    assert {"axis": "setting", "perturbation": "Table 9", "category": "", "reason": "needs the paper's private data"} \
        in p.not_run()


def test_identical_severities_are_marked_in_the_dry_run_and_the_report():
    # FFmpeg clamps the quantiser at 31: codec1 s2-s5 and codec2 s3-s5 are byte-identical (tests/perturb measure it)
    import pandas as pd

    from robustlab.bench.report_protocol import identical_table

    p = load_protocol("msrvtt-p")
    spec = p.build_spec(dataset={"name": "builtin-videos", "n": 4},
                        perturbations="codec1/mpeg2video,codec2/mpeg4,defocus_blur", text_perturbations="none",
                        combine="none", models=["builtin:tiny-clip-video"])
    marked = [ln for ln in dry_run_lines(spec, p) if "identical output" in ln]
    assert [ln.split("] ", 1)[1].split(" {")[0] for ln in marked] == [
        "visual codec1/mpeg2video s3 [Digital]", "visual codec1/mpeg2video s4 [Digital]",
        "visual codec1/mpeg2video s5 [Digital]", "visual codec2/mpeg4 s4 [Digital]", "visual codec2/mpeg4 s5 [Digital]"]
    assert all(ln.endswith(("(identical output to s2)", "(identical output to s3)")) for ln in marked)
    df = pd.DataFrame({"visual": ["clean"] + ["codec1/mpeg2video"] * 5 + ["codec2/mpeg4"] * 2 + ["defocus_blur"] * 5,
                       "visual_severity": [0, 1, 2, 3, 4, 5, 4, 5, 1, 2, 3, 4, 5]})
    t = identical_table(df)
    assert t[["perturbation", "severities", "same output as"]].values.tolist() == [
        ["codec1/mpeg2video", "s3, s4, s5", "s2"], ["codec2/mpeg4", "s4, s5", "s3 (not run)"]]
    assert "qscale=31" in t["effective parameters"].iloc[0]


def _tables(d):
    from robustlab.bench.report_data import load_run, report_tables

    return {t: tab for t, _, tab in report_tables(load_run(d))["protocol"]}


def test_clavi_and_peeling_tables_in_their_papers_layout(tmp_path):
    # Issue 48: the clavi and peeling layouts had no renderer, and clavi's report used plain accuracy; PEELING's own
    # MMI was overwritten by the report's γ-MMI column (0.0 on a clean cell)
    import pandas as pd

    from robustlab.cli import main

    for name, more in (("clavi", []), ("peeling", ["--perturbations", "fog"])):  # one of FIP's 15 corruptions
        assert main(["bench", "--protocol", name, "--n", "4", "--out", str(tmp_path / name), "--report"] + more) == 0
    c = _tables(tmp_path / "clavi")
    t3 = c["CLAVI Table 3 — balanced and consistent accuracy (%)"]
    assert list(t3["metric"]) == ["Balanced Acc", "CAcc_V", "CAcc_T", "CAcc_V-control", "CAcc_T-control",
                                  "CAcc_V-complement", "CAcc_T-complement"]
    assert set(t3.columns) == {"metric", "builtin:tiny-vilt", "JustAsk", "FrozenBiLM", "Singularity-T", "All-In-One+"}
    assert set(t3["JustAsk"]) == {"not run here"}
    csv = pd.read_csv(tmp_path / "clavi" / "results.csv")
    assert list(csv["metric"]) == ["balanced_acc"]  # the paper's headline, not "acc"
    assert t3["builtin:tiny-vilt"].iloc[0] == f"{100 * csv['balanced_acc'].iloc[0]:.1f}"  # one decimal, as text
    assert "Not run here (4 of the paper's baselines)" in c
    p = _tables(tmp_path / "peeling")
    t2 = p["PEELING Table II — ACC / MMI / ATCR (%)"].set_index("metric")  # the paper's rows: ACC, MMI, ATCR
    runs = pd.read_csv(tmp_path / "peeling" / "results.csv")
    csv, fog = runs[runs["axes"] == "clean"].iloc[0], runs[runs["visual"] == "fog"].iloc[0]
    assert csv["mmi"] == 0.0 and csv["peeling_mmi"] > 0  # γ's MMI of the clean cell, and the task's own
    assert t2.loc["MMI", "PEELING"] == f"{100 * csv['peeling_mmi']:.1f}"
    assert t2.loc["MMI", "PEELING"] == f"{100 * (csv['acc_original'] - csv['acc_adv']) / csv['acc_original']:.1f}"
    assert t2.loc["ATCR", "PEELING"] == f"{100 * csv['oracle_tests_valid']:.1f}"
    assert (t2.loc["ACC", "QAQA"], t2.loc["ACC", "CAT"], t2.loc["ACC", "SIN"]) == ("not run here",) * 3
    # FIP (Table II's image-corruption baseline): the original expressions on the corrupted images
    assert t2.loc["ACC", "FIP Fog"] == f"{100 * fog['acc_original']:.1f}"
    assert t2.loc["ACC", "FIP Snow"] == "not swept"
