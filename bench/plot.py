#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns attnscore_bench's JSON into a chart, ours against the anchors on the standard shapes:
prefill in GFLOP/s (GOP/s for int8), decode in GB/s of K read.

usage: attnscore_bench --benchmark_out=bench.json --benchmark_out_format=json
       python3 bench/plot.py bench.json chart.png
Needs matplotlib (Debian: python3-matplotlib). Rows that are not "<who>/d<d>/<n_q>x<n_k>
[/hot|/cold]" (threads:, attention) are left out: they are read from the table.
"""
import collections
import json
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROW = re.compile(r"^([^/]+)/(d\d+/\d+x\d+(?:/hot|/cold)?)$")


def collect(run):
    prefill, decode = collections.OrderedDict(), collections.OrderedDict()
    for b in run["benchmarks"]:
        m = ROW.match(b["name"])
        if b.get("run_type", "iteration") != "iteration" or not m:
            continue
        who, shape = m.groups()
        if who.startswith(("threads:", "attn")):
            continue
        if who.startswith("openblas_"):  # sgemm for prefill, sgemv for decode: one series
            who = "openblas"
        if shape.endswith(("/hot", "/cold")):
            if "K_GB" in b:
                decode.setdefault(shape, {})[who] = b["K_GB"]
        else:
            rate = b.get("GFLOP", b.get("GOP"))
            if rate is not None:
                prefill.setdefault(shape, {})[who] = rate
    return prefill, decode


def bars(ax, table, ylabel):
    shapes = list(table)
    whos = []
    for s in shapes:
        for w in table[s]:
            if w not in whos:
                whos.append(w)
    width = 0.8 / max(1, len(whos))
    for i, who in enumerate(whos):
        xs = [s + (i - (len(whos) - 1) / 2) * width for s in range(len(shapes))]
        ax.bar(xs, [table[s].get(who, 0) for s in shapes], width, label=who)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="x-small", ncol=2)


def main(src, dst):
    with open(src) as f:
        run = json.load(f)
    prefill, decode = collect(run)
    if not prefill and not decode:
        sys.exit("no standard-shape benchmark in " + src)
    panels = [p for p in ((prefill, "prefill: GFLOP/s (int8: GOP/s), one thread"),
                          (decode, "decode: GB/s of K, one thread")) if p[0]]
    fig, axes = plt.subplots(len(panels), 1, figsize=(14, 5 * len(panels)), squeeze=False)
    for ax, (table, label) in zip(axes[:, 0], panels):
        bars(ax, table, label)
    context = run.get("context", {})
    axes[0, 0].set_title("attnscore vs anchors (%s; OpenBLAS core %s)" %
                         (context.get("cpu_features", "?"), context.get("openblas_core", "-")))
    fig.tight_layout()
    fig.savefig(dst, dpi=100)
    print("wrote", dst)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
