"""A small labelled set for scoring PEELING's object / property extraction (the paper's RQ4, Table V).

The paper's 80-expression evaluation split is not released; this set is robustlab's own: the released prompt's seven
examples (example 1's subject corrected from "bag" to "tie") and 33 RefCOCO-style expressions written and labelled
for robustlab, by the convention of the paper's examples -- the object is the head noun as written; each property is
a substring of the expression (adjectives one by one unless they form one colour, prepositional phrases, participial
and relative clauses without their relativiser and auxiliary, coordinated clauses split at "and"), determiners left
out. Labelled before the extractor was run on them. Part of :mod:`robustlab.diagnostics.peeling`."""
from __future__ import annotations

GOLD_NAME = "robustlab-peeling-extraction-v1"
# (expression, object, properties)
GOLD: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # the released prompt's examples (IMGAT/PEELING entity_extraction.py), example 1 corrected
    ("a blue tie being worn by a man", "tie", ("blue", "being worn by a man")),
    ("A white bird stands behind two brown birds", "bird", ("white", "stands behind two brown birds")),
    ("a van", "van", ()),
    ("A man with black hair who is wearing a black shit and pulling on the rope.", "man",
     ("with black hair", "wearing a black shit", "pulling on the rope")),
    ("Man in a car talking on a cellphone", "Man", ("in a car", "talking on a cellphone")),
    ("A ceramic top to a toilet tank", "top", ("ceramic", "to a toilet tank")),
    ("A navy blue SUV with dark windows and a silver grill.", "SUV",
     ("navy blue", "with dark windows and a silver grill")),
    # robustlab's own RefCOCO-style expressions
    ("left guy", "guy", ("left",)),
    ("man in red shirt on the right", "man", ("in red shirt", "on the right")),
    ("the woman holding an umbrella", "woman", ("holding an umbrella",)),
    ("white car parked behind the bus", "car", ("white", "parked behind the bus")),
    ("second horse from left", "horse", ("second", "from left")),
    ("a small brown dog lying on the couch", "dog", ("small", "brown", "lying on the couch")),
    ("the girl who is wearing a pink dress", "girl", ("wearing a pink dress",)),
    ("bowl of rice closest to you", "bowl", ("of rice", "closest to you")),
    ("tall giraffe on the left", "giraffe", ("tall", "on the left")),
    ("elephant with its trunk raised", "elephant", ("with its trunk raised",)),
    ("the blue chair next to the table", "chair", ("blue", "next to the table")),
    ("guy in black jacket sitting on a bench", "guy", ("in black jacket", "sitting on a bench")),
    ("an old man with a white beard", "man", ("old", "with a white beard")),
    ("zebra facing the camera", "zebra", ("facing the camera",)),
    ("the slice of pizza at the bottom", "slice", ("of pizza", "at the bottom")),
    ("middle sheep", "sheep", ("middle",)),
    ("a red umbrella", "umbrella", ("red",)),
    ("boy on skateboard", "boy", ("on skateboard",)),
    ("large orange cat sleeping", "cat", ("large", "orange", "sleeping")),
    ("the laptop that is open", "laptop", ("open",)),
    ("player in white who is swinging the bat", "player", ("in white", "swinging the bat")),
    ("plate with a sandwich on it", "plate", ("with a sandwich on it",)),
    ("the lamp", "lamp", ()),
    ("yellow taxi driving down the street", "taxi", ("yellow", "driving down the street")),
    ("kid with glasses and a hat", "kid", ("with glasses and a hat",)),
    ("the closest motorcycle", "motorcycle", ("closest",)),
    ("donut with pink frosting near the top", "donut", ("with pink frosting", "near the top")),
    ("a man standing behind the counter", "man", ("standing behind the counter",)),
    ("green apple in the front", "apple", ("green", "in the front")),
    ("bird perched on a branch", "bird", ("perched on a branch",)),
    ("the smiling lady in a blue shirt", "lady", ("smiling", "in a blue shirt")),
    ("wooden bench under the tree", "bench", ("wooden", "under the tree")),
    ("black and white cow behind the fence", "cow", ("black and white", "behind the fence")),
)
