// Outbound webhooks (spec: Events): catalogue events a runner may emit become envelopes in
// `webhook_outbox` (webhooks/capture.ts), in the transaction that stores them, so an envelope exists
// exactly when its event does; its stable id makes a re-sent event capture nothing new.
import { RUNNER_TYPES } from '../../webhooks/catalogue.ts';
import { captureRunnerEvents } from '../../webhooks/capture.ts';
import type { Sink } from '../sink.ts';

export const webhooksSink: Sink = {
  name: 'webhooks',
  kinds: [...RUNNER_TYPES],
  phase: 'transaction',
  handle: (tx, { runnerId, events }) => captureRunnerEvents(tx, runnerId, events),
};
