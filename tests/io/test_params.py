"""One ``KEY=VALUE`` parser (issue 25) and numbers checked before any work (issue 23): ``robustlab.io.params``, the
adaptation methods' declared ranges, and the CLI's ``--param`` / ``--adapt-param`` / ``--option`` refusing a value
that is not finite or out of range with one line on stderr and exit 2, before a dataset or model is loaded."""
import math
import subprocess
import sys

import pytest

from robustlab.io.params import (
    MAX_KEY,
    MAX_VALUE,
    ParamError,
    check_finite,
    check_number,
    describe_range,
    parse_kv,
)

NOT_FINITE = ["inf", "-inf", "+inf", "nan", "NaN", "Infinity", "-Infinity", "1e999", "-1e999", "INF", " inf "]


# ---- the parser ----------------------------------------------------------------------------------------------------
def test_values_are_json_where_they_parse_else_text():
    got = parse_kv(["steps=3", "lr=3e-4", "select=true", "rerank=false", "order=shuffled", 'name="x"', "none=null",
                    "stages=back_translation,synonym", " key = 7", "empty=", "list=[1, 2.5]", "path=/a/b=c"])
    assert got == {"steps": 3, "lr": 3e-4, "select": True, "rerank": False, "order": "shuffled", "name": "x",
                   "none": None, "stages": "back_translation,synonym", "key": 7, "empty": "", "list": [1, 2.5],
                   "path": "/a/b=c"}
    assert isinstance(got["steps"], int) and isinstance(got["lr"], float)
    assert parse_kv([]) == {} and parse_kv(None) == {}
    assert parse_kv(["hat-vtr.capacity=8"], "--adapt-param") == {"hat-vtr.capacity": 8}


@pytest.mark.parametrize("value", NOT_FINITE)
def test_numbers_that_are_not_finite_are_refused(value):
    with pytest.raises(ParamError) as e:
        parse_kv([f"steps={value}"])
    msg = str(e.value)
    assert msg == f"--param steps={value}: not a finite number" and "\n" not in msg
    assert isinstance(e.value, ValueError)


def test_not_finite_inside_a_json_value_and_integers_beyond_the_float_range():
    for value in ("[1, 1e999]", '{"a": NaN}', "[[Infinity]]"):
        with pytest.raises(ParamError, match="not a finite number"):
            parse_kv([f"x={value}"], "--option")
    with pytest.raises(ParamError, match=r"^--option x=9+\.\.\.: not a finite number \(beyond the float range\)$"):
        parse_kv(["x=" + "9" * 400], "--option")
    assert parse_kv(["x=" + "9" * 300]) == {"x": int("9" * 300)}  # large, but a float can hold it
    with pytest.raises(ParamError, match="not a finite number"):
        parse_kv(['x="inf"'])  # quoted, it is still read as a number downstream: refused all the same


@pytest.mark.parametrize("pair, message", [
    ("steps", "--param 'steps': use KEY=VALUE (e.g. --param steps=1)"),
    ("=3", "--param '=3': use KEY=VALUE (e.g. --param steps=1)"),
    ("  =3", "--param '  =3': use KEY=VALUE (e.g. --param steps=1)"),
    ("st eps=1", "--param 'st eps=1': a key is letters, digits, _ . and - (e.g. --param steps=1)"),
])
def test_malformed_pairs(pair, message):
    with pytest.raises(ParamError) as e:
        parse_kv([pair])
    assert str(e.value) == message


def test_flag_and_example_are_the_callers():
    with pytest.raises(ParamError, match=r"^--option 'method': use KEY=VALUE \(e\.g\. --option method=render\)$"):
        parse_kv(["method"], "--option", example="method=render")
    with pytest.raises(ParamError, match=r"^--adapt-param 'x': use KEY=VALUE or METHOD\.KEY=VALUE"):
        parse_kv(["x"], "--adapt-param", form="KEY=VALUE or METHOD.KEY=VALUE")


def test_duplicates_are_one_line():
    with pytest.raises(ParamError) as e:
        parse_kv(["steps=1", "lr=1e-4", "steps=2"])
    assert str(e.value) == "--param steps is given twice (steps=1 and steps=2); give each key once"
    with pytest.raises(ParamError, match="given twice"):
        parse_kv(["steps=1", " steps =1"])  # the same key once stripped
    assert parse_kv(["steps=1", "tent.steps=2"]) == {"steps": 1, "tent.steps": 2}  # different keys


def test_absurdly_long_keys_and_values():
    assert parse_kv(["k=" + "x" * MAX_VALUE]) == {"k": "x" * MAX_VALUE}
    with pytest.raises(ParamError) as e:
        parse_kv(["k=" + "x" * (MAX_VALUE + 1)])
    assert str(e.value).endswith(f"the value is {MAX_VALUE + 1} characters long (at most {MAX_VALUE})")
    assert len(str(e.value)) < 120
    with pytest.raises(ParamError, match=rf"the key is {MAX_KEY + 1} characters long \(at most {MAX_KEY}\)"):
        parse_kv(["k" * (MAX_KEY + 1) + "=1"])
    with pytest.raises(ParamError, match="the value is 1000001 characters long"):
        parse_kv(["k=" + "9" * 1_000_001])


def test_messages_are_one_line_whatever_the_input():
    for pair in ("a\nb", "k=1", "k=\ninf", "x\x00=1", "k=1e999\n"):
        try:
            parse_kv(["k=1", pair])
        except ParamError as e:
            assert "\n" not in str(e) and "\x00" not in str(e), repr(str(e))


# ---- number checks -------------------------------------------------------------------------------------------------
def test_check_number_types_and_ranges():
    assert check_number("steps", 3, kind=int, lo=1, hi=100) == 3
    assert check_number("steps", "3", kind=int, lo=1, hi=100) == 3
    assert check_number("steps", 3.0, kind=int, lo=1, hi=100) == 3
    assert check_number("lr", "3e-4", lo=0, hi=1, lo_open=True) == pytest.approx(3e-4)
    assert isinstance(check_number("lr", 1, lo=0, hi=1), float)
    for v in (0, 101, 2.5, "many", True, None, [3], ""):
        with pytest.raises(ParamError) as e:
            check_number("steps", v, kind=int, lo=1, hi=100)
        assert str(e.value).startswith("steps must be an integer in [1, 100], got ")
    with pytest.raises(ParamError, match=r"^lr must be a number in \(0, 1\], got 0$"):
        check_number("lr", 0, lo=0, hi=1, lo_open=True)
    with pytest.raises(ParamError, match=r"^x must be a number in \[0, 1\), got 1$"):
        check_number("x", 1, lo=0, hi=1, hi_open=True)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), "inf", "nan", "1e999", "-Infinity"])
def test_check_number_refuses_what_is_not_finite(value):
    for kind in (int, float):
        with pytest.raises(ParamError) as e:
            check_number("steps", value, kind=kind, lo=1, hi=100)
        assert str(e.value).endswith("(not a finite number)") and "\n" not in str(e.value)
    with pytest.raises(ParamError, match="not a finite number"):
        check_number("x", value)  # no range at all: still finite only


def test_check_number_integer_beyond_the_float_range():
    with pytest.raises(ParamError, match=r"beyond the float range"):
        check_number("steps", 10 ** 400, kind=int, lo=1, hi=100)
    with pytest.raises(ParamError, match=r"beyond the float range"):
        check_number("lr", -(10 ** 400))


def test_describe_range_and_check_finite():
    assert describe_range(int, 1, 100) == "an integer in [1, 100]"
    assert describe_range(float, 0.0, 1.0, lo_open=True) == "a number in (0, 1]"
    assert describe_range(float, 0, None, lo_open=True) == "a number > 0"
    assert describe_range(int, None, 5) == "an integer <= 5"
    assert describe_range(float) == "a number"
    assert check_finite("x", 3) == 3 and check_finite("x", "swap") == "swap" and check_finite("x", [1, {"a": 2}])
    for v in (float("inf"), "nan", [1, float("nan")], {"a": float("-inf")}, 10 ** 400):
        with pytest.raises(ParamError, match=r"^x=.*: not a finite number"):
            check_finite("x", v)


# ---- the adaptation methods' declared ranges -------------------------------------------------------------------------
def _numeric_params():
    from robustlab.adapt.methods import METHODS

    return [(m.name, p) for m in METHODS.values() for p in m.all_params() if p.kind in ("int", "float")]


def test_every_numeric_parameter_declares_a_finite_range():
    rows = _numeric_params()
    assert rows
    for method, p in rows:
        assert p.min is not None and p.max is not None, (method, p.name)
        assert math.isfinite(p.min) and math.isfinite(p.max) and p.min < p.max, (method, p.name)
        if p.default is not None:
            assert p.min <= p.default <= p.max, (method, p.name)
    from robustlab.adapt.methods import COMMON

    common = {p.name: p for p in COMMON}
    assert (common["steps"].min, common["steps"].max) == (1, 100)
    assert (common["batch_size"].min, common["batch_size"].max) == (1, 4096)
    assert (common["lr"].min, common["lr"].max) == (0.0, 1.0)  # 0: HAT-VTR's reranking alone (test_adapt)
    from robustlab.adapt.methods import Param

    with pytest.raises(ValueError, match="declares a finite range"):
        Param("x", 1, "int", "no range")
    with pytest.raises(ValueError, match="declares a finite range"):
        Param("x", 1.0, "float", "infinite", 0.0, float("inf"))


@pytest.mark.parametrize("method, p", _numeric_params(), ids=lambda x: getattr(x, "name", x))
def test_each_parameter_is_held_to_its_range(method, p):
    from robustlab.adapt import AdaptError
    from robustlab.adapt.methods import check_params

    assert check_params(method, {p.name: p.min}) == {p.name: p.min}
    assert check_params(method, {p.name: p.max}) == {p.name: p.max}
    assert check_params(method, {p.name: str(p.max)})[p.name] == p.max  # text that reads as a number
    assert check_params(method, {p.name: None}) == {p.name: None}  # None: the default
    step = 1 if p.kind == "int" else max(abs(p.max), 1) * 1e-3
    want = "an integer" if p.kind == "int" else "a number"
    for bad in (p.min - step, p.max + step):
        with pytest.raises(AdaptError) as e:
            check_params(method, {p.name: bad})
        assert str(e.value).startswith(f"{method}: {p.name} must be {want} in ")
    for bad in (float("inf"), float("-inf"), float("nan"), "inf", "1e999", 10 ** 400):
        with pytest.raises(AdaptError) as e:
            check_params(method, {p.name: bad})
        msg = str(e.value)
        assert msg.startswith(f"{method}: {p.name} must be {want} in ") and "\n" not in msg
        assert "not a finite number" in msg or "beyond the float range" in msg
    if p.kind == "int":
        with pytest.raises(AdaptError, match="must be an integer"):
            check_params(method, {p.name: p.min + 0.5})
    with pytest.raises(AdaptError, match=f"must be {want}"):
        check_params(method, {p.name: True})  # a bool is not a number


def test_other_parameter_kinds_and_resolve():
    from robustlab.adapt import AdaptError, resolve
    from robustlab.adapt.methods import check_params

    assert check_params("hat-vtr", {"select": "false", "rerank": 1}) == {"select": False, "rerank": True}
    with pytest.raises(AdaptError, match=r"^hat-vtr: select must be true or false, got maybe$"):
        check_params("hat-vtr", {"select": "maybe"})
    with pytest.raises(AdaptError, match=r"^tent: order must be dataset or shuffled, got sorted$"):
        check_params("tent", {"order": "sorted"})
    with pytest.raises(AdaptError, match="tent has no parameter stepz"):
        check_params("tent", {"stepz": 1})
    with pytest.raises(AdaptError, match="none has no parameter steps"):
        check_params("none", {"steps": 1})
    p = resolve("tcr", "text", 100, {"lr": "3e-4", "steps": 2.0})
    assert p["lr"] == pytest.approx(3e-4) and p["steps"] == 2 and isinstance(p["steps"], int)
    with pytest.raises(AdaptError, match=r"^tent: steps must be an integer in \[1, 100\], got inf \(not a finite"):
        resolve("tent", "text", 100, {"steps": float("inf")})  # was an OverflowError deep inside
    with pytest.raises(AdaptError, match=r"^tent: lr must be a number in \[0, 1\], got -0.1$"):
        resolve("tent", "text", 100, {"lr": -0.1})
    assert resolve("hat-vtr", "visual", 100, {"lr": 0})["lr"] == 0.0


def test_the_sweep_axis_refuses_the_same_values():
    from robustlab.bench import SweepError, parse_adapt
    from robustlab.tasks.conditions import adapt_condition

    with pytest.raises(SweepError, match=r"^--adapt-param batch_size=1e999: not a finite number$"):
        parse_adapt("tent", ["batch_size=1e999"])  # the one parser, as on the command line
    with pytest.raises(SweepError, match=r"tent: batch_size must be an integer in \[1, 4096\], got 0"):
        parse_adapt("tent", ["batch_size=0"])
    with pytest.raises(ValueError, match="not a finite number"):
        adapt_condition("tent", {"steps": "inf"})


def test_task_options_refuse_numbers_that_are_not_finite():
    from robustlab.tasks.registry import get

    task = get("clavi")
    task.check_options({"seed": 3, "method": "swap"})
    for v in (float("inf"), float("nan"), "1e999", [float("inf")]):
        with pytest.raises(ValueError, match=r"^task clavi option seed=.*: not a finite number$"):
            task.check_options({"seed": v})
    with pytest.raises(ValueError, match="task clavi has no option foo"):
        task.check_options({"foo": 1})


def test_the_python_api_refuses_inf_in_one_line():
    import robustlab as rl
    from robustlab import adapt
    from robustlab.adapt import AdaptError

    model = rl.load_model("builtin:tiny-clip-video-meanp")
    videos = rl.datasets.build("builtin-videos", n=8)
    for kw in ({"steps": float("inf")}, {"batch_size": 1e999}, {"lr": float("nan")}):
        with pytest.raises(AdaptError) as e:
            adapt.run(model, videos, "tent", "t2v", "char_swap:2", **kw)
        assert "not a finite number" in str(e.value) and "\n" not in str(e.value)


# ---- the CLI: one line on stderr, exit 2, before any dataset or model ----------------------------------------------
MODEL = "builtin:tiny-clip-video-meanp"
ADAPT = ["adapt", "--model", MODEL, "--n", "8", "--perturb", "keyboard", "--method", "tent"]
BENCH = ["bench", "--models", MODEL, "--dataset", "builtin-videos", "--n", "8", "--tasks", "retrieval",
         "--perturbations", "gaussian_noise", "--severities", "3", "--adapt", "tent"]
EVAL = ["eval", "clavi", "--model", "builtin:tiny-vilt", "--n", "4"]


@pytest.fixture
def no_work(monkeypatch):
    """Building a dataset or loading a model fails the test: the refusals must come before any."""
    import robustlab.datasets.registry as dreg
    import robustlab.models.registry as mreg
    from robustlab import cli, models

    def boom(*a, **k):
        raise AssertionError("a dataset or model was loaded before the parameters were checked")

    monkeypatch.setattr(dreg, "build", boom)
    monkeypatch.setattr(mreg, "load_model", boom)
    monkeypatch.setattr(models, "load_model", boom, raising=False)
    monkeypatch.setattr(cli, "_build_dataset", boom)
    monkeypatch.setattr(cli, "_load", boom)


@pytest.mark.parametrize("argv, line", [
    (ADAPT + ["--param", "steps=inf"], "robustlab: --param steps=inf: not a finite number"),
    (ADAPT + ["--param", "steps=1e999"], "robustlab: --param steps=1e999: not a finite number"),
    (ADAPT + ["--param", "lr=-Infinity"], "robustlab: --param lr=-Infinity: not a finite number"),
    (ADAPT + ["--param", "batch_size=NaN"], "robustlab: --param batch_size=NaN: not a finite number"),
    (ADAPT + ["--param", "steps=0"], "robustlab: tent: steps must be an integer in [1, 100], got 0"),
    (ADAPT + ["--param", "steps=101"], "robustlab: tent: steps must be an integer in [1, 100], got 101"),
    (ADAPT + ["--param", "batch_size=5000"],
     "robustlab: tent: batch_size must be an integer in [1, 4096], got 5000"),
    (ADAPT + ["--param", "lr=-1e-4"], "robustlab: tent: lr must be a number in [0, 1], got -0.0001"),
    (ADAPT + ["--param", "lr=2"], "robustlab: tent: lr must be a number in [0, 1], got 2"),
    (ADAPT + ["--param", "steps=" + "9" * 400],
     ("robustlab: --param steps=9999999999999999999999999999999999999...: not a finite number (beyond the float "
      "range)")),
    (ADAPT + ["--param", "steps=1", "--param", "steps=2"],
     "robustlab: --param steps is given twice (steps=1 and steps=2); give each key once"),
    (ADAPT + ["--param", "stepz=1"], None),
    (BENCH + ["--adapt-param", "batch_size=1e999", "--out", "OUT"],
     "robustlab: --adapt-param batch_size=1e999: not a finite number"),
    (BENCH + ["--adapt-param", "tent.steps=inf", "--out", "OUT"],
     "robustlab: --adapt-param tent.steps=inf: not a finite number"),
    (BENCH + ["--adapt-param", "steps=0", "--out", "OUT"],
     "robustlab: tent: steps must be an integer in [1, 100], got 0"),
    (BENCH + ["--adapt-param", "steps", "--out", "OUT"],
     ("robustlab: --adapt-param 'steps': use KEY=VALUE or METHOD.KEY=VALUE (e.g. --adapt-param steps=1, "
      "tent.lr=1e-4)")),
    (EVAL + ["--option", "x=1e999"], "robustlab: --option x=1e999: not a finite number"),
    (EVAL + ["--option", "seed=nan"], "robustlab: --option seed=nan: not a finite number"),
    (EVAL + ["--option", "method"], "robustlab: --option 'method': use KEY=VALUE (e.g. --option method=render)"),
    (EVAL + ["--option", "seed=1", "--option", "seed=2"],
     "robustlab: --option seed is given twice (seed=1 and seed=2); give each key once"),
])
def test_cli_refuses_before_any_work(argv, line, no_work, tmp_path, capsys):
    from robustlab.cli import main

    out = tmp_path / "run"
    argv = [str(out) if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    cap = capsys.readouterr()
    lines = cap.err.splitlines()
    assert len(lines) == 1, cap.err
    assert "Traceback" not in cap.err and cap.out == ""
    if line is not None:
        assert lines[0] == line
    else:
        assert lines[0].startswith("robustlab: tent has no parameter stepz")
    assert not out.exists()  # a refused sweep writes nothing


@pytest.mark.parametrize("argv, line", [
    (ADAPT + ["--param", "steps=inf"], "robustlab: --param steps=inf: not a finite number"),
    (BENCH + ["--adapt-param", "batch_size=1e999", "--out", "OUT"],
     "robustlab: --adapt-param batch_size=1e999: not a finite number"),
])
def test_cli_subprocess_stderr_is_one_line(argv, line, tmp_path):
    argv = [str(tmp_path / "run") if a == "OUT" else a for a in argv]
    r = subprocess.run([sys.executable, "-m", "robustlab.cli", *argv], capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [line], r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


@pytest.mark.parametrize("argv", [ADAPT + ["--param", "steps=1"],
                                  BENCH + ["--adapt-param", "batch_size=8", "--out", "OUT"],
                                  EVAL + ["--option", "seed=3"]])
def test_the_guard_bites_once_the_parameters_are_good(argv, no_work, tmp_path):
    """The ``no_work`` guard above is real: with good parameters the command goes on to load a dataset."""
    from robustlab.cli import main

    argv = [str(tmp_path / "run") if a == "OUT" else a for a in argv]
    with pytest.raises(AssertionError, match="loaded before the parameters were checked"):
        main(argv)
