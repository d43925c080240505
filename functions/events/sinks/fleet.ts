// Fleet notices (live notice `fleet`): orchestrator, slot, pr, issue, pane and person events change what
// a project's Fleet page shows, so after commit it is told to read again: one notice per project and
// kind in the batch, for projects this runner serves (a project named by another runner's event is not).
import { publish } from '../../live/publish.ts';
import { watchList } from '../../runners/watch-list.ts';
import type { Sink } from '../sink.ts';

export const fleetSink: Sink = {
  name: 'fleet notices',
  kinds: ['orchestrator.*', 'slot.*', 'pr.*', 'issue.*', 'pane.*', 'person.*'],
  phase: 'after-commit',
  async handle(db, { runnerId, events }) {
    const named = new Set<string>();
    for (const e of events) {
      const project = e.payload.project;
      if (typeof project === 'string') named.add(`${project}\n${e.kind}`);
    }
    if (named.size === 0) return;
    // A pool membership is not counted: the orchestrator, slots and panes of a project are its primary's.
    const mine = new Set((await watchList(db, runnerId)).filter((p) => !p.pool).map((p) => p.id));
    for (const key of named) {
      const [projectId, kind] = key.split('\n');
      if (mine.has(projectId)) await publish(db, { type: 'fleet', projectId, kind }, { projectId });
    }
  },
};
