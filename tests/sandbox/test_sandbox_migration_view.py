"""The demo's view of a migration (`status.progress` as its snapshots read it): followed per step into its
`--json` figures, shown in the live view, and marked on the PNG timeline with its first ETA beside its end."""

from __future__ import annotations

import io
from pathlib import Path

from smoothscale.sandbox.demo import ProgressView, StepResult, _follow_migration
from smoothscale.sandbox.observe import Migration, PodView, Snapshot
from smoothscale.sandbox.report import step_figures, timeline_png

POD = PodView("orders-0", "zone-a", True, False, "r1", active=2, standby=1, warmup=0, lag=0, generation=3)


def snapshot(at: float, migration: Migration | None) -> Snapshot:
    return Snapshot(
        at=at,
        step="scale-out",
        generation=3,
        revoking=0,
        pods=(POD,),
        replicas=3,
        ready=3,
        stable=migration is None,
        migrating=migration is not None,
        next_probe=None,
        migration=migration,
    )


def test_migration_parses_the_status_progress() -> None:
    progress = {
        "startTime": "2026-11-28T12:00:00Z",
        "percent": 25.0,
        "recordsRestored": 1000,
        "recordsLeft": 3000,
        "estimatedCompletionTime": "2026-11-28T12:00:20Z",
        "firstEstimatedCompletionTime": "2026-11-28T12:00:18Z",
    }
    migration = Migration.of(progress)
    assert migration is not None
    assert migration.records == 4000 and migration.eta is not None and migration.first_eta is not None
    assert migration.eta - migration.started == 20 and migration.first_eta - migration.started == 18
    assert Migration.of(None) is None and Migration.of({}) is None


def test_a_step_follows_each_migration_to_its_end_into_its_figures_view_and_timeline(tmp_path: Path) -> None:
    result = StepResult("scale-out", "3 -> 6", started=99.0)
    first = Migration(started=100.0, percent=10.0, records=4000, eta=None, first_eta=None)
    timeline = [
        snapshot(100.0, first),
        snapshot(101.0, Migration(100.0, 40.0, 4000, eta=104.0, first_eta=104.0)),
        snapshot(102.0, Migration(100.0, 70.0, 4000, eta=104.5, first_eta=104.0)),
        snapshot(105.0, None),
    ]
    for seen in timeline:
        _follow_migration(seen, result.migrations)
    (migration,) = result.migrations
    assert (migration.started, migration.ended, migration.records, migration.first_eta) == (
        100.0,
        105.0,
        4000,
        104.0,
    )
    assert [sample[2] for sample in migration.samples] == [None, 104.0, 104.5]
    figures = step_figures(result)["migrations"]
    assert figures == [
        {
            "start": 100.0,
            "end": 105.0,
            "records": 4000,
            "first_eta": 104.0,
            "samples": [[100.0, 10.0, None], [101.0, 40.0, 104.0], [102.0, 70.0, 104.5]],
        }
    ]
    out = io.StringIO()
    ProgressView(out)(timeline[1], 2, 5, "3 -> 6")
    assert "migration 40%, ETA in 3 s" in out.getvalue()
    result.settled = 106.0
    path = timeline_png(timeline, [result], tmp_path / "timeline.png")
    assert path.stat().st_size > 0
