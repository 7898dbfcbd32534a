#!/usr/bin/env python3
"""Reads final.sh's anchors.txt and bench.txt (rounds of the C anchors and
of the drivers' benchmarks, alternating) and prints each figure's median
over the rounds, and each driver figure's ratio to its anchor: the median
of the ratios of the same round.

    python3 scripts/ratios.py OUT/anchors.txt OUT/bench.txt
"""
import re
import statistics
import sys

def rounds(path, parse):
    out, cur = [], None
    for line in open(path):
        if line.startswith("== round"):
            cur = {}
            out.append(cur)
        elif line.startswith("=="):
            cur = None
        elif cur is not None:
            parse(line, cur)
    return out

def anchor_line(line, d):
    m = re.match(r"(C(?:\[\w+\])? [^:]+): ([\d.]+)", line)
    if m:
        d[m.group(1)] = float(m.group(2))

def bench_rounds(path):
    # Names are unique per package; prefix them with it.
    out, cur, pkg = [], None, ""
    for line in open(path):
        if line.startswith("== round"):
            cur = {}
            out.append(cur)
            continue
        if line.startswith("=="):
            cur = None
            continue
        if cur is None:
            continue
        m = re.match(r"pkg: github.com/rig-go/rig/(\S+)", line)
        if m:
            pkg = m.group(1)
        m = re.match(r"Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) ns-median)?", line)
        if m:
            cur[pkg + "." + m.group(1)] = float(m.group(3) or m.group(2))
    return out

PAIRS = [
    ("cudadev.GPULaunch", "C launch enqueue"),
    ("cudadev.GPULaunchBatch", "C[blocking] launch enqueue in batches of 256"),
    ("cudadev.GPURigLaunch", "C launch enqueue"),
    ("cudadev.GPURigLaunchBatch", "C[blocking] launch enqueue in batches of 256"),
    ("cudadev.GPURoundTrip", "C launch+writeValue64+spin median"),
    ("cudadev.GPURigRoundTrip", "C launch+writeValue64+spin median"),
    ("cudadev.GPUPipelined", "C launch+write64 pipelined"),
    ("cudadev.GPUCall", "C trivial call (cuCtxGetCurrent)"),
    ("cudadev.GPUPushPop", "C[blocking] push+pop"),
    ("nvdev.GPURigLaunch", "C launch enqueue"),
    ("nvdev.GPURigLaunchPinnedRings", "C launch enqueue"),
    ("nvdev.GPURigRoundTrip", "C launch+sync median"),
    ("nvdev.GPURoundTrip", "C launch+writeValue64+spin median"),
    ("nvdev.GPUChained", "C launch+write64 pipelined"),
    ("nvdev.GPUChained1000", "C graph of 1000 chained empty kernels"),
]

SHARES = [
    ("cudadev.GPURigLaunch", "cudadev.GPULaunch"),
    ("cudadev.GPURigLaunchBatch", "cudadev.GPULaunchBatch"),
    ("cudadev.GPURigRoundTrip", "cudadev.GPURoundTrip"),
    ("nvdev.GPURigRoundTrip", "nvdev.GPURoundTrip"),
]

def main():
    an = rounds(sys.argv[1], anchor_line)
    be = bench_rounds(sys.argv[2])
    n = min(len(an), len(be))
    print(f"{n} rounds")
    for k in sorted({k for r in an for k in r}):
        vs = [r[k] for r in an if k in r]
        print(f"anchor {k}: median {statistics.median(vs):.1f} (min {min(vs):.1f}, max {max(vs):.1f})")
    for b, a in PAIRS:
        rs = [be[i][b] / an[i][a] for i in range(n) if b in be[i] and a in an[i]]
        bs = [be[i][b] for i in range(n) if b in be[i]]
        as_ = [an[i][a] for i in range(n) if a in an[i]]
        if not rs:
            continue
        print(f"{b}: median {statistics.median(bs):.1f} ns against {a} {statistics.median(as_):.1f}: "
              f"ratio median {statistics.median(rs):.3f} (rounds {', '.join(f'{x:.2f}' for x in rs)})")
    # rig's share: each figure through rig over the driver's own, same round.
    for rig, drv in SHARES:
        rs = [r[rig] / r[drv] for r in be if rig in r and drv in r]
        if rs:
            print(f"{rig} over {drv}: median {statistics.median(rs):.3f} (rounds {', '.join(f'{x:.2f}' for x in rs)})")

if __name__ == "__main__":
    main()
