"""Run onnx's node conformance cases against rtx.onnx.backend and report pass rates per domain.

    .venv/bin/python tools/onnx_conformance_report.py             # table + failing cases
    .venv/bin/python tools/onnx_conformance_report.py --readme     # also rewrite the README table
    .venv/bin/python tools/onnx_conformance_report.py -k conv      # only cases whose name contains "conv"

A case passes when rtx's outputs match the suite's expected outputs with the suite's own check
(onnx.backend.test.runner.Runner.assert_similar_outputs: shapes, dtypes, rtol/atol per case).
The pass rate is passed / all node cases of the domain, skipped ones counted as failures.
"Native" counts the passing cases whose every op has an rtx kernel; the others pass through
the ONNX function body of an op rtx has no kernel for (rtx.onnx.load(..., expand_functions=True)).
packages/rtx-onnx/tests/test_conformance.py checks that the README table agrees with its list
of expected failures.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "packages" / "rtx-onnx" / "README.md"
BEGIN, END = "<!-- conformance-table:begin -->", "<!-- conformance-table:end -->"


def node_cases():
    """Every node case of the installed onnx: (name, domain, case)."""
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    out = []
    for c in cases:
        domains = {n.domain or "ai.onnx" for n in c.model.graph.node} - {"ai.onnx"}
        out.append((c.name, sorted(domains)[0] if domains else "ai.onnx", c))
    return out


def case_ops(graph):
    """Every (domain, op_type) a graph uses, subgraphs included."""
    ops = set()
    for n in graph.node:
        ops.add((n.domain or "ai.onnx", n.op_type))
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                ops |= case_ops(g)
    return ops


def is_native(model):
    """True when every op of the case has an rtx kernel (no ONNX function body is expanded)."""
    from rtx.onnx._ops import OPS, domain_of, load_all
    load_all()
    local = {(f.domain or "ai.onnx", f.name) for f in model.functions}
    return all((domain_of(d), o) in OPS or (d, o) in local for d, o in case_ops(model.graph))


def run_case(case):
    """None when the case passes, else the error text."""
    import numpy as np
    from onnx.backend.test.runner import Runner, _normalize_tensor

    import rtx.onnx.backend as backend
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            rep = backend.prepare(case.model, "CPU")
            for inputs, ref in case.data_sets:
                outs = rep.run([_normalize_tensor(x) for x in inputs])
                Runner.assert_similar_outputs([_normalize_tensor(x) for x in ref], list(outs), rtol=case.rtol,
                                              atol=case.atol, model_dir=None)
    except Exception as e:  # noqa: BLE001  (a failing case is data here)
        text = " ".join(line.strip() for line in f"{type(e).__name__}: {e}".splitlines() if line.strip())
        return text[:400]
    return None


def table(results):
    """results: (domain, passed, native) per case -> the README's markdown table."""
    per = collections.defaultdict(lambda: [0, 0, 0])
    for domain, ok, native in results:
        per[domain][0] += 1
        per[domain][1] += ok
        per[domain][2] += ok and native
    rows = ["| domain | node cases | passed | pass rate | passed with rtx kernels only |",
            "| --- | ---: | ---: | ---: | ---: |"]
    tot = [0, 0, 0]
    for domain in sorted(per, key=lambda d: (d != "ai.onnx", d)):
        n, p, k = per[domain]
        tot = [tot[0] + n, tot[1] + p, tot[2] + k]
        rows.append(f"| {domain} | {n} | {p} | {100 * p / n:.1f}% | {k} ({100 * k / n:.1f}%) |")
    n, p, k = tot
    if n:
        rows.append(f"| **all** | **{n}** | **{p}** | **{100 * p / n:.1f}%** | **{k} ({100 * k / n:.1f}%)** |")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--readme", action="store_true", help="rewrite the table in packages/rtx-onnx/README.md")
    ap.add_argument("--quiet", action="store_true", help="do not list failing cases")
    ap.add_argument("--trace", action="store_true", help="print tracebacks of failing cases")
    args = ap.parse_args(argv)
    t0 = time.time()
    results, failures = [], {}
    for name, domain, case in node_cases():
        if args.k and args.k not in name:
            continue
        err = run_case(case)
        if err and args.trace:
            try:
                import rtx.onnx.backend as backend
                backend.prepare(case.model).run([x for x in case.data_sets[0][0]])
            except Exception:  # noqa: BLE001
                traceback.print_exc()
        results.append((domain, err is None, is_native(case.model)))
        if err:
            failures[name] = err
    text = table(results)
    print(text)
    print(f"\n{len(results)} cases in {time.time() - t0:.0f} s")
    if not args.quiet:
        for name, err in sorted(failures.items()):
            print(f"FAIL {name}: {err}")
    if args.readme and not args.k:
        readme = README.read_text()
        if BEGIN not in readme:
            raise SystemExit(f"{README} has no {BEGIN} marker")
        head, rest = readme.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        README.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
        print(f"updated {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
