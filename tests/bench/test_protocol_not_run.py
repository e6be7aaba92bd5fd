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
