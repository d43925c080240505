-- 0035: Recover failed deliveries (functions/webhooks/recover.ts) reads one webhook's failed
-- deliveries. Without this it walks every delivery of that webhook kept for 30 days (the log index),
-- and a busy webhook has hundreds of thousands of them, nearly all delivered. Partial on status, like
-- 0021's: only failed rows are in it, and it names no column the worker's claim changes, so claims stay
-- cheap updates.
create index outbound_deliveries_failed_by_webhook on outbound_deliveries (webhook_id) where status = 'failed';
