#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns attnscore_bench's JSON into a chart: GFLOP/s per shape, ours against the anchors.

usage: attnscore_bench --benchmark_out=bench.json --benchmark_out_format=json
       python3 bench/plot.py bench.json chart.png
Needs matplotlib (Debian: python3-matplotlib).
"""
import collections
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    with open(src) as f:
        run = json.load(f)
    # name = "<who>/d<d>/<n_q>x<n_k>[/hot|/cold]": who is a kernel name or an anchor.
    table = collections.OrderedDict()
    whos = []
    for b in run["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or "GFLOP" not in b:
            continue
        who, shape = b["name"].split("/", 1)
        if who.startswith("openblas_"):  # sgemm for prefill, sgemv for decode: one series
            who = "openblas"
        table.setdefault(shape, {})[who] = b["GFLOP"]
        if who not in whos:
            whos.append(who)
    if not table:
        sys.exit("no benchmark with a GFLOP counter in " + src)
    shapes = list(table)
    width = 0.8 / len(whos)
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(shapes)), 5))
    for i, who in enumerate(whos):
        xs = [s + (i - (len(whos) - 1) / 2) * width for s in range(len(shapes))]
        ax.bar(xs, [table[s].get(who, 0) for s in shapes], width, label=who)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=45, ha="right")
    ax.set_ylabel("GFLOP/s (one thread)")
    context = run.get("context", {})
    ax.set_title("attnscore vs anchors, %s" % context.get("host_name", ""))
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print("wrote", dst)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
