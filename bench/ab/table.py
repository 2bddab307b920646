#!/usr/bin/env python3
"""bench/ab's table: one line per measurement in, one Markdown table out.

    table.py RUNS     RUNS: "side row connections round rps p50_ms p99_ms errors [cpu_ms]" a
                      line, side `old` or `new`, cpu_ms the server's CPU milliseconds a
                      request over the measured window; prints the table

Each figure is the median over the rounds of that side (per column, as bench/load/run.sh
does); new/old is the ratio of those medians. Throughput higher is better, so a req/s
ratio below FLAG (0.95) is flagged; for p50 and p99 a ratio above 1 is the slower one.
The per-round column is each round's new req/s over the same round's old: its spread is
the run's noise.
"""

import statistics
import sys
from dataclasses import dataclass

FLAG = 0.95

DESCRIPTIONS = {
    "keyword": "keyword search",
    "hybrid": "hybrid search",
    "add": "add a document",
    "health": "GET /v1/health",
    "generation": "generation, 2 steps (wait=true)",
}


@dataclass
class Side:
    rps: float
    p50: float
    p99: float
    errors: int
    rounds: list  # req/s per round, in round order
    cpu: float = float("nan")  # the server's CPU-ms a request (nan when not measured)


@dataclass
class Row:
    name: str
    connections: int
    old: Side
    new: Side

    def ratio(self):
        return self.new.rps / self.old.rps if self.old.rps else float("nan")

    def per_round(self):
        return [n / o for o, n in zip(self.old.rounds, self.new.rounds) if o]

    def flagged(self):
        return self.ratio() < FLAG or self.old.errors > 0 or self.new.errors > 0


def parse(lines):
    """The rows in the order they were first measured; a row one side lacks is left out."""
    seen = {}
    for line in lines:
        if not line.strip():
            continue
        side, row, conns, rnd, rps, p50, p99, errors, *cpu = line.split()
        seen.setdefault(row, {"connections": int(conns), "old": [], "new": []})
        cpu = float(cpu[0]) if cpu else float("nan")
        seen[row][side].append((int(rnd), float(rps), float(p50), float(p99), int(errors), cpu))
    rows = []
    for name, r in seen.items():
        if r["old"] and r["new"]:
            rows.append(Row(name, r["connections"], side_of(r["old"]), side_of(r["new"])))
    return rows


def side_of(measures):
    measures = sorted(measures)
    return Side(
        rps=statistics.median(m[1] for m in measures),
        p50=statistics.median(m[2] for m in measures),
        p99=statistics.median(m[3] for m in measures),
        errors=sum(m[4] for m in measures),
        rounds=[m[1] for m in measures],
        cpu=statistics.median(m[5] for m in measures),
    )


def ratio(new, old):
    return f"{new / old:.2f}x" if old else "n/a"


def cpu(ms):
    return "n/a" if ms != ms else f"{ms:.3f}"


def markdown(rows):
    out = [
        "| row | old req/s | new req/s | **new/old** | CPU-ms a request old → new | CPU new/old | p50 ms old → new | p50 new/old | p99 ms old → new | p99 new/old | per-round new/old | errors old/new | |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for r in rows:
        label = f"{DESCRIPTIONS.get(r.name, r.name)}, {r.connections} connection{'s' if r.connections != 1 else ''}"
        flag = "**below 0.95x**" if r.ratio() < FLAG else ""
        if r.old.errors or r.new.errors:
            flag = (flag + " **errors**").strip()
        per_round = ", ".join(f"{x:.2f}" for x in r.per_round())
        out.append(
            f"| {label} | {r.old.rps:,.1f} | {r.new.rps:,.1f} | **{r.ratio():.2f}x** | "
            f"{cpu(r.old.cpu)} → {cpu(r.new.cpu)} | {ratio(r.new.cpu, r.old.cpu) if r.old.cpu == r.old.cpu and r.new.cpu == r.new.cpu else 'n/a'} | "
            f"{r.old.p50:.2f} → {r.new.p50:.2f} | {ratio(r.new.p50, r.old.p50)} | "
            f"{r.old.p99:.2f} → {r.new.p99:.2f} | {ratio(r.new.p99, r.old.p99)} | "
            f"{per_round} | {r.old.errors}/{r.new.errors} | {flag} |"
        )
    return "\n".join(out)


def verdict(rows):
    low = [r.name for r in rows if r.flagged()]
    if not low:
        return f"No row below {FLAG}x and no errors."
    return f"**Flagged: {', '.join(low)}** (req/s below {FLAG}x of the old binary, or errors)."


def main(argv):
    with open(argv[0]) as f:
        rows = parse(f)
    print(markdown(rows))
    print()
    print(verdict(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
