// Skill run records (docs/skill-runs.md, "On the server"): state, progress lines and the patch
// (runs/ingest.ts), after commit; each update is idempotent and publishes its own live notice.
import { recordSkillRuns } from '../../runs/ingest.ts';
import type { Sink } from '../sink.ts';

export const runsSink: Sink = {
  name: 'skill runs',
  kinds: ['skill_run.*'],
  phase: 'after-commit',
  handle: (db, { runnerId, events }) => recordSkillRuns(db, runnerId, events),
};
