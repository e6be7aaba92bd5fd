"""The parts of benchmarks/bench_concurrency.py (issue 15's concurrency and load benchmark): :mod:`.common`
(constants, the app's pages), :mod:`.server` (the streamlit server and its memory from /proc), :mod:`.browser`
(async page helpers), :mod:`.session` (one browser session, what the driver expects, the shared ledger),
:mod:`.scenarios` and :mod:`.scenarios_tools` (one scenario per session), :mod:`.driver` (the run) and
:mod:`.report` (the results and their summary)."""
