// The consumers of runner events, in the order ingest.ts calls them within each phase (sink.ts says
// what a sink is). A new consumer: one file under sinks/ and one line here.
import type { Sink } from './sink.ts';
import { codehostSink } from './sinks/codehost.ts';
import { costSink } from './sinks/cost.ts';
import { fleetSink } from './sinks/fleet.ts';
import { notificationsSink } from './sinks/notifications.ts';
import { runsSink } from './sinks/runs.ts';
import { webhooksSink } from './sinks/webhooks.ts';

export const SINKS: readonly Sink[] = [
  // In the transaction that stores the rows:
  codehostSink,
  webhooksSink,
  notificationsSink,
  // After commit, before the ack:
  runsSink,
  costSink,
  fleetSink,
];
