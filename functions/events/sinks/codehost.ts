// The code host's state on the server (docs/architecture.md, "A runner event"; docs/github-app.md), in the
// transaction that stores the events: a runner's `codehost.queue` events replace its projects' issue
// queues (codehost/queue.ts); its pr.* events are observations of the pull requests' state
// (codehost/pulls.ts), which emits the pr.* catalogue events on a transition — so the runner's poll and
// an App delivery seeing the same change make one. Only projects this runner serves are touched.
import { sql } from '../../lib/db/index.ts';
import { PR_KINDS, observe, runnerObservation } from '../../codehost/pulls.ts';
import { queueEvents } from '../../codehost/queue.ts';
import type { Sink } from '../sink.ts';

export const codehostSink: Sink = {
  name: 'code host',
  kinds: ['codehost.queue', ...PR_KINDS],
  phase: 'transaction',
  async handle(tx, { runnerId, events }) {
    const mine = new Set((await tx.query<{ id: string }>(sql`select id from projects where runner_id = ${runnerId}`)).map((p) => p.id));
    await queueEvents(tx, runnerId, events.filter((e) => e.kind === 'codehost.queue'), mine);
    for (const e of events) {
      const projectId = e.payload.project;
      const o = typeof projectId === 'string' && mine.has(projectId) ? runnerObservation(e, projectId) : null;
      if (o) await observe(tx, projectId as string, o);
    }
  },
};
