// Sessions and LLM requests (docs/cost.md, "Server"; cost/ingest.ts), after commit: one transaction of
// their own (with the `session.started` activity item of a new session), then the budget checks of the
// projects they touched.
import { LLM_REQUEST, SESSION_META } from '../../../protocol/usage.ts';
import { recordUsage } from '../../cost/ingest.ts';
import type { Sink } from '../sink.ts';

export const costSink: Sink = {
  name: 'cost',
  kinds: [SESSION_META, LLM_REQUEST],
  phase: 'after-commit',
  handle: (db, { runnerId, events }) => recordUsage(db, runnerId, events),
};
