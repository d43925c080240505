-- 0021: the webhook worker's claim (functions/webhooks/worker.ts claimBatch) looks for due
-- deliveries webhook by webhook, only among webhooks whose circuit lets them through.
--
-- Before, it walked every due delivery in time order and dropped those of webhooks whose circuit was
-- open. Deliveries of an unreachable receiver stay pending and due while its circuit is open (new
-- events keep adding to them), and, being the oldest, they sat at the head of that walk: with 10,000
-- of them, every claim for every other webhook read all 10,000 first (17 ms, against 0.2 ms now). One
-- dead receiver slowed delivery to all the others, more every hour it stayed dead.
create index outbound_deliveries_due_by_webhook on outbound_deliveries (webhook_id, next_attempt_at) where status = 'pending';
drop index outbound_deliveries_due; -- contract: no release names it; the previous one's claim plans with the new index meanwhile (correct, slower while it runs)
