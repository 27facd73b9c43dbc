#!/usr/bin/env python3
"""One training step's GPU time by kernel, from two Nsight Compute CSV logs (bench/kernel_profile.sh).

    bench/kernel_summary.py SHORT.csv LONG.csv [--top N]

Each log is `ncu --csv --page raw --metrics gpu__time_duration.sum` of one run; LONG ran exactly
one step more than SHORT. Per kernel name, the launches and time of LONG less those of SHORT are
that step's. Prints one row per kernel, longest first: launches, microseconds, share of the
step's kernel time, then the total. Reads the details page's layout too (Metric Name, Metric
Unit, Metric Value columns), and durations in any of ncu's time units.
"""
import argparse
import collections
import csv
import sys

METRIC = "gpu__time_duration.sum"
TOTAL = "total kernel time of one step"
UNITS_NS = {"ns": 1.0, "nsecond": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
            "second": 1e9, "s": 1e9}


def number(text):
    return float(text.replace(",", ""))


def kernel_name(row):
    for column in ("Kernel Name", "Function Name", "Name"):
        if row.get(column):
            return row[column]
    raise ValueError("no kernel name column in " + ", ".join(row))


def rows_after_header(path):
    """ncu's log may begin with the application's or ncu's own lines; the table starts at "ID"."""
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith('"ID"'):
            return list(csv.DictReader(lines[i:]))
    raise ValueError(f"{path}: no ncu CSV table (a line starting with \"ID\")")


def durations(path):
    """Per kernel name: (launches, nanoseconds)."""
    rows = rows_after_header(path)
    totals = collections.defaultdict(lambda: [0, 0.0])
    if rows and "Metric Name" in rows[0]:
        for row in rows:
            if row["Metric Name"] != METRIC:
                continue
            scale = UNITS_NS[row["Metric Unit"]]
            entry = totals[kernel_name(row)]
            entry[0] += 1
            entry[1] += number(row["Metric Value"]) * scale
        return totals
    if rows and METRIC not in rows[0]:
        raise ValueError(f"{path}: no {METRIC} column")
    scale = 1.0
    for row in rows:
        if not row.get("ID"):  # the units row under the header
            scale = UNITS_NS.get(row[METRIC], 1.0)
            continue
        entry = totals[kernel_name(row)]
        entry[0] += 1
        entry[1] += number(row[METRIC]) * scale
    return totals


def one_step(short, long):
    step = {}
    for name, (launches, ns) in long.items():
        before = short.get(name, (0, 0.0))
        if launches - before[0] > 0:
            step[name] = (launches - before[0], max(ns - before[1], 0.0))
    return step


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("short")
    parser.add_argument("long")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    try:
        step = one_step(durations(args.short), durations(args.long))
    except (OSError, ValueError, KeyError) as e:
        print(f"kernel_summary.py: {e}", file=sys.stderr)
        return 1
    if not step:
        print("kernel_summary.py: the longer run launched no more kernels than the shorter", file=sys.stderr)
        return 1
    total = sum(ns for _, ns in step.values())

    def row(label, launches, ns):
        share = f"{100 * ns / total:>6.1f}%" if label != TOTAL else ""
        print(f"{label[:60]:<60} {launches:>8} {ns / 1e3:>10.1f} {share}".rstrip())

    print(f"{'kernel':<60} {'launches':>8} {'us':>10} {'share':>7}")
    ordered = sorted(step.items(), key=lambda item: -item[1][1])
    for name, (launches, ns) in ordered[:args.top]:
        row(name, launches, ns)
    rest = [counts for _, counts in ordered[args.top:]]
    if rest:
        row(f"({len(rest)} more kernels)", sum(l for l, _ in rest), sum(ns for _, ns in rest))
    row(TOTAL, sum(l for l, _ in step.values()), total)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
