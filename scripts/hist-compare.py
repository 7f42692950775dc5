#!/usr/bin/env python3
"""Two or more latency histograms in the layout of `cyclictest -h`, side by side.

Usage: scripts/hist-compare.py FILE[:LABEL] FILE[:LABEL] ... [--block N] [--rows]

Each FILE is the output of `cyclictest -h MAX -q` or of `ticklab host run --histogram=MAX`
(or `ticklab sim --histogram`), `-` for standard input. Both print rows `NNNNNN count ...`
(one column per thread / CPU, 1 us buckets) after a `# Histogram` line, then `# Total:`,
`# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:` and `# Histogram Overflows:`.
ticklab prints two histograms per frame group, the wake-up latency first (what cyclictest
measures) and the jitter second; `--block N` picks the N-th histogram of every file (0, the
default, is the first: the one to compare with cyclictest's). The first column of a block is
read (cyclictest -t 1, one ticklab frame worker).

For each input it prints the `/dev/cpu_dma_latency` line it found, the samples in buckets,
the overflows, min / avg / max as the tool printed them, and p50 / p90 / p99 / p99.9 in
whole microseconds computed here from the buckets the same way for every input (a
percentile that falls among the overflows prints as `>MAX`). `--rows` adds the bucket rows
where any input has a count. Exit status 2 when an input has no histogram.
"""

import sys

PERCENTILES = (50.0, 90.0, 99.0, 99.9)


def read_text(path):
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def blocks(text):
    """Every histogram of `text`: a dict of buckets, summary lines, and the latency line."""
    out = []
    cur = None
    dma = None
    title = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("# /dev/cpu_dma_latency"):
            dma = s[2:]
            continue
        if s == "# Histogram":
            cur = {"buckets": [], "summary": {}, "dma": dma, "title": title}
            out.append(cur)
            continue
        if s.startswith("#") and "histogram of" in s:
            title = s[2:]
            continue
        if cur is None:
            continue
        if s.startswith("# ") and ":" in s:
            key, _, rest = s[2:].partition(":")
            fields = rest.split()
            if fields and key in (
                "Total",
                "Min Latencies",
                "Avg Latencies",
                "Max Latencies",
                "Max Latencies (exact us)",
                "Histogram Overflows",
            ):
                cur["summary"][key] = fields[0]
            continue
        parts = s.split()
        if len(parts) >= 2 and parts[0].isdigit() and len(parts[0]) == 6:
            cur["buckets"].append((int(parts[0]), int(parts[1])))
    return out


def percentile(buckets, overflows, p):
    total = sum(c for _, c in buckets) + overflows
    if total == 0:
        return "-"
    want = p / 100.0 * total
    seen = 0
    for us, c in buckets:
        seen += c
        if seen >= want and c > 0:
            return str(us)
    top = buckets[-1][0] + 1 if buckets else 0
    return f">{top - 1}"


def main(argv):
    block = 0
    rows = False
    inputs = []
    args = iter(argv)
    for a in args:
        if a == "--block":
            try:
                block = int(next(args))
            except (StopIteration, ValueError):
                print("hist-compare: --block needs a number", file=sys.stderr)
                return 2
        elif a == "--rows":
            rows = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            inputs.append(a)
    if len(inputs) < 1:
        print(__doc__, file=sys.stderr)
        return 2
    cols = []
    for spec in inputs:
        path, label = spec.rsplit(":", 1) if ":" in spec else (spec, spec)
        try:
            found = blocks(read_text(path))
        except OSError as e:
            print(f"hist-compare: {path}: {e}", file=sys.stderr)
            return 2
        if len(found) <= block:
            print(
                f"hist-compare: {path}: {len(found)} histogram(s), no block {block}",
                file=sys.stderr,
            )
            return 2
        b = found[block]
        overflows = int(b["summary"].get("Histogram Overflows", "0"))
        cols.append((label, b, overflows))

    width = max(12, max(len(c[0]) for c in cols) + 1)
    print(f"{'':28}" + "".join(f"{c[0]:>{width}}" for c in cols))
    for label, b, _ in cols:
        print(f"{label}: {b['title'] or 'histogram'}; {b['dma'] or 'no cpu_dma_latency line'}")

    def line(name, values):
        print(f"{name:28}" + "".join(f"{v:>{width}}" for v in values))

    line("buckets (us)", [str(len(b["buckets"])) for _, b, _ in cols])
    line("samples in buckets", [str(sum(c for _, c in b["buckets"])) for _, b, _ in cols])
    line("overflows", [str(o) for _, _, o in cols])
    for key in ("Min Latencies", "Avg Latencies", "Max Latencies"):
        vals = [b["summary"].get(key, "-") for _, b, _ in cols]
        line(key.lower() + " (us)", [str(int(v)) if v.isdigit() else "-" for v in vals])
    for p in PERCENTILES:
        line(f"p{p:g} (us)", [percentile(b["buckets"], o, p) for _, b, o in cols])
    if rows:
        counts = [dict(b["buckets"]) for _, b, _ in cols]
        top = max((len(b["buckets"]) for _, b, _ in cols), default=0)
        for us in range(top):
            vals = [d.get(us, 0) for d in counts]
            if any(vals):
                line(f"{us:06}", [str(v) for v in vals])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
