// Notifications (spec: Notifications): `pane.quota_hit` and `person.needed` (notifications/capture.ts),
// in the transaction that stores the events, with their chat pushes; the event id is the dedupe key, so a
// re-sent event makes no second notification.
import { RUNNER_NOTIFICATION_KINDS, captureRunnerNotifications } from '../../notifications/capture.ts';
import type { Sink } from '../sink.ts';

export const notificationsSink: Sink = {
  name: 'notifications',
  kinds: RUNNER_NOTIFICATION_KINDS,
  phase: 'transaction',
  handle: (tx, { runnerId, events }) => captureRunnerNotifications(tx, runnerId, events),
};
