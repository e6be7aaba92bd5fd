"""Export: the basket of perturbed examples, downloadable as a zip with a manifest that regenerates them."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from robustlab.export.basket import Basket, filmstrip
from robustlab.export.manifest import build_zip
from ui.export_view import describe_scores, describe_source, shown_examples
from ui.media import safe_md

st.header("Export — the basket")

basket: Basket | None = st.session_state.get("basket")
if not basket:
    st.info("Your basket is empty: pick a perturbation on the Perturb page and press **Add to basket**.")
    st.page_link("pages/perturb.py", label="Open the Perturb page", icon=":material/science:")
    st.stop()


def show_media(ex, which: str):
    x = ex.clean if which == "clean" else ex.output
    if ex.kind == "image":
        st.image(x, caption=which, width="stretch")
    elif ex.kind == "video":
        st.image(filmstrip(x, n=4), caption=f"{which} · {len(x)} frames", width="stretch")
    else:
        st.caption(which)
        st.text(x)


sig = basket.signature()
cached = st.session_state.get("export_zip")
if not cached or cached[0] != sig:
    try:
        with st.spinner("Packing the zip…"):
            cached = (sig, build_zip(basket))
    except (RuntimeError, ValueError, OSError, MemoryError) as e:
        st.error(f"The export cannot be built ({type(e).__name__}: {e or 'out of memory'}); the basket is kept as "
                 "it is: free some memory or remove examples and try again.")
        st.stop()
    st.session_state["export_zip"] = cached
d1, d2 = st.columns([1, 1])
with d1:
    st.download_button(f"Download zip ({len(basket)} example(s), {len(cached[1]) / 1e6:.1f} MB)", data=cached[1],
                       file_name="robustlab-export.zip", mime="application/zip", key="export_download",
                       on_click="ignore", type="primary", icon=":material/download:")
with d2:
    st.button("Empty the basket", key="export_clear", on_click=basket.clear)
st.caption(f"{len(basket)} example(s). Each one keeps its clean input, its perturbed output and the record that "
           "regenerates it.")
for ex in shown_examples(basket):
    with st.container(border=True, key=f"basket_item_{ex.id}"):
        c1, c2, c3 = st.columns([2, 2, 3])
        with c1:
            show_media(ex, "clean")
        with c2:
            show_media(ex, "perturbed")
        with c3:
            st.markdown(f"**{safe_md(ex.title())}**")  # a combined condition: every part (issue 45)
            no_op = (ex.model or {}).get("no_op")
            if no_op:
                left = no_op if isinstance(no_op, str) else ", ".join(map(str, no_op))
                st.caption(f"no-op, left out: {safe_md(left)} (changed nothing)")
            st.caption(f"{ex.kind} · {safe_md(describe_source(ex.source))}")  # a file name: text, never Markdown
            if ex.model:
                scores = describe_scores(ex.model.get("scores"))
                st.caption(f"model {safe_md(ex.model.get('id') or '—')}" + (f" · {safe_md(scores)}" if scores else ""))
            st.button("Remove", key=f"rm_{ex.id}", on_click=basket.remove, args=(ex.id,), icon=":material/delete:")

rows = [{"#": i, "kind": ex.kind,
         "perturbation": ex.record["name"] + "".join(f" + {p.record['name']}" for p in ex.parts or ()),
         "variant": ex.record["variant"],
         "severity": ex.record["severity"], "seed": ex.record["seed"], "source": describe_source(ex.source),
         "model": (ex.model or {}).get("id") or "", "model scores": describe_scores((ex.model or {}).get("scores"))}
        for i, ex in enumerate(basket, start=1)]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="basket_table")

st.caption("The zip holds `clean/`, `perturbed/` and `manifest.jsonl`. Rebuild and verify every example bit for "
           "bit with `robustlab regenerate robustlab-export.zip --out DIR`.")
