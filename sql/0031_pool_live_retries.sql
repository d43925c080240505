-- 0031: a pool run's retry is live for its trigger or schedule (issue #37; functions/triggers/fire.ts
-- liveRunQuery, functions/schedules/runner.ts liveRun). The retry is a run no delivery names (the
-- delivery keeps the lost run's id), so "a run of this trigger still live" also asks the pool queue: only
-- its rows not ended, by their source, are in this index.
create index pool_runs_live_source on pool_runs (source_id) where status <> 'ended';
