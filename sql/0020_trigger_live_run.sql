-- 0020: whether a trigger's previous run is still live (functions/triggers/fire.ts hasLiveRun) is
-- answered from the few rows that can say yes, not from the trigger's whole history.
--
-- Before, the check read every `fired` delivery of the trigger and looked its run up: a trigger with
-- 20,000 fired deliveries in its retention window cost 18 ms of PostgreSQL per claim (two sequential
-- scans), and the cost grew with the history. Now: runs that are live (queued, starting, running) are
-- found through their own small index and matched to their delivery by run id; fired deliveries
-- whose run has not reported yet are found by time (the last ten minutes' worth).
create index skill_runs_live on skill_runs (id) where state in ('queued', 'starting', 'running');
create index inbound_deliveries_run on inbound_deliveries (run_id) where status = 'fired';
create index inbound_deliveries_fired on inbound_deliveries (trigger_id, fired_at) where status = 'fired';
