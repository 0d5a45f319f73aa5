"""report.html: a verdict (`coverage.verdict`: "could not judge" when the logs were not understood), the
diagnoses in plain words with the lines that support them, the rebalance table (one row per generation),
PNG charts (rebalance timeline, restore rates, time to balance), and what was read: the inputs' line
counts, the recognised lines per file and kind, examples of rebalance lines no pattern recognised.

Only small tables reach the driver: diagnoses, the rebalance timeline, per-pod and per-event figures.
matplotlib draws off-screen (Agg) so that the report builds on machines without a display.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from smoothscale.pipeline.analyze import AnalyzeResult
from smoothscale.pipeline.coverage import verdict
from smoothscale.pipeline.html_table import table
from smoothscale.pipeline.log_lines import UNRECOGNISED

MAX_TIMELINE_ROWS = 5_000  # points drawn on the timeline; the Parquet table keeps them all
MAX_TABLE_ROWS = 500  # rebalances listed in the page
MAX_UNRECOGNISED = 20  # examples of unrecognised lines listed
GENERATION_COLUMNS = (
    "group", "generation", "start", "end", "duration_s", "leader", "member_count", "reason", "sources", "cite"
)  # fmt: skip
INPUT_COLUMNS = (
    "kind", "file", "lines", "timestamped", "recognised", "unrecognised", "skipped", "continuation",
    "unknown", "readable", "malformed",
)  # fmt: skip
SOURCES = {
    "assignor": ("o", "tab:blue"),
    "broker": ("s", "tab:orange"),
    "client": ("D", "tab:purple"),
    "journal": ("^", "tab:green"),
}


def _rows(result: AnalyzeResult, table: str, limit: int | None = None) -> list[dict[str, Any]]:
    frame = result.tables[table]
    return [row.asDict() for row in (frame.limit(limit) if limit else frame).collect()]


def plot_timeline(
    rebalances: Sequence[Mapping[str, Any]], diagnosed: Sequence[Mapping[str, Any]], path: Path
) -> None:
    groups = sorted({r["group"] for r in rebalances if r["group"]})
    fig, ax = plt.subplots(figsize=(11, 1.5 + 0.6 * max(1, len(groups))))
    for source, (marker, color) in SOURCES.items():
        points = [
            (r["ts"], groups.index(r["group"])) for r in rebalances if r["source"] == source and r["group"]
        ]
        if points:
            times, rows = zip(*points, strict=True)
            ax.scatter(times, rows, marker=marker, color=color, label=source, s=22)
    for d in diagnosed:
        if d["group"] in groups and d["ts"] is not None:
            ax.axvline(d["ts"], color="tab:red", alpha=0.25, linewidth=1)
    ax.set_yticks(range(len(groups)), groups)
    ax.set_title("rebalances per group (red: a diagnosis)")
    if ax.get_legend_handles_labels()[0]:  # no rebalance read (unreadable logs): nothing to name
        ax.legend(loc="upper left", fontsize="small")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_bars(labels: Sequence[str], values: Sequence[float], title: str, unit: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(11, 4))
    ax.bar(range(len(values)), values, color="tab:blue")
    ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize="small")
    ax.set_ylabel(unit)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _diagnosis_items(diagnosed: Iterable[Mapping[str, Any]]) -> str:
    items = []
    for d in diagnosed:
        when = d["ts"].isoformat(sep=" ") if isinstance(d["ts"], datetime) else str(d["ts"])
        cites = ", ".join(f"<code>{html.escape(c)}</code>" for c in d["evidence"] or [])
        items.append(
            f"<li><strong>{html.escape(d['kind'])}</strong> in <em>{html.escape(d['group'] or '-')}</em> at"
            f" {html.escape(when)}: {html.escape(d['detail'] or '')}. Lines: {cites or 'none'}</li>"
        )
    return "<ul>" + "".join(items) + "</ul>" if items else ""


def _read_lines(result: AnalyzeResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Recognised lines per file and kind, and a few unrecognised rebalance lines."""
    from pyspark.sql import functions as F  # noqa: PLC0415 - Spark only when a report is built

    found = result.tables["log_incidents"]
    name = F.regexp_extract("file", r"([^/]+)$", 1).alias("file")
    per_kind = found.groupBy(name, "kind").count().orderBy("file", "kind")
    unrecognised = (
        found.where(F.col("kind") == UNRECOGNISED)
        .orderBy("file", "line")
        .select(
            F.concat_ws(":", name, F.col("line").cast("string")).alias("line"),
            F.substring("text", 1, 300).alias("text"),
        )
        .limit(MAX_UNRECOGNISED)
    )
    return [r.asDict() for r in per_kind.collect()], [r.asDict() for r in unrecognised.collect()]


def write_report(result: AnalyzeResult, out: Path) -> Path:
    """Draws the charts next to report.html and writes it; returns its path."""
    diagnosed = _rows(result, "diagnoses")
    rebalances = _rows(result, "rebalances", MAX_TIMELINE_ROWS)
    generations = _rows(result, "generations", MAX_TABLE_ROWS)
    per_kind, unrecognised = _read_lines(result)
    by_pod = _rows(result, "restore_by_pod")
    by_zone = _rows(result, "restore_by_zone")
    balance = _rows(result, "time_to_balance")
    plot_timeline(rebalances, diagnosed, out / "timeline.png")
    pods = [f"{r['app']}/{r['pod']}" for r in by_pod]
    rates = [r["mean_restore_rate"] or 0.0 for r in by_pod]
    plot_bars(pods, rates, "mean restore rate per warmup, by pod", "records/s", out / "restore_rates.png")
    events = [f"{r['app']} #{r['event']}" for r in balance]
    seconds = [r["time_to_balance_s"] or 0.0 for r in balance]
    title = "time to balance per scaling event (0: not balanced before the journal ends)"
    plot_bars(events, seconds, title, "s", out / "time_to_balance.png")
    kinds: dict[str, int] = {}
    for d in diagnosed:
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "no diagnosis"
    judged = verdict(result.inputs, len(diagnosed))
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>smoothscale analyze</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse;font-size:small}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}}code{{font-size:small}}</style></head><body>
<h1>Rebalance analysis</h1>
<p><strong>{html.escape(judged)}.</strong> {html.escape(summary)}.</p>
<h2>Diagnoses</h2>{_diagnosis_items(diagnosed)}
<h2>Rebalances</h2>
<p>One row per generation of each group, from the coordinator's, the members' and the leader's lines
(<em>sources</em>); a row without generation is a rebalance that had not completed when the logs end, or a
Streams client's REBALANCING spell no generation accounts for.</p>
{table(generations, GENERATION_COLUMNS)}
<h2>Rebalance timeline</h2><img src="timeline.png" alt="rebalance timeline">
<h2>Restore rates</h2><img src="restore_rates.png" alt="restore rates by pod">
{table(by_pod, ["app", "pod", "zone", "warmups", "restored_records", "mean_restore_rate", "throughput"])}
{table(by_zone, ["app", "zone", "warmups", "restored_records", "mean_restore_rate", "throughput"])}
<h2>Time to balance</h2><img src="time_to_balance.png" alt="time to balance">
{table(balance, ["app", "event", "start", "steps", "pods", "reason", "balanced_at", "time_to_balance_s"])}
<h2>Inputs</h2>
<p>Lines no pattern recognised are counted, not fatal: <em>skipped</em> are log lines of no interest here,
<em>unrecognised</em> speak of rebalances in a wording no pattern knows, <em>continuation</em> are stack
traces and the other lines of multi-line records, <em>unknown</em> are in no layout the parser reads;
<em>readable</em> is the share of lines whose layout was understood; <em>malformed</em> journal lines are
not JSON records.</p>
{table(result.inputs, INPUT_COLUMNS)}
<h3>Recognised lines per file and kind</h3>
{table(per_kind, ["file", "kind", "count"])}
<h3>Lines about rebalances no pattern recognised (first {MAX_UNRECOGNISED})</h3>
{table(unrecognised, ["line", "text"])}
<p>Tables (Parquet): {", ".join(sorted(result.tables))} under <code>tables/</code>.</p>
</body></html>
"""
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
