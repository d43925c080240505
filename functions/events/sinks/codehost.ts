// The code host's state on the server (docs/architecture.md, "A runner event"; docs/github-app.md): a
// runner's `codehost.queue` events replace its projects' issue queues (codehost/queue.ts), in the
// transaction that stores them. Only projects this runner serves are touched.
import { sql } from '../../lib/db/index.ts';
import { queueEvents } from '../../codehost/queue.ts';
import type { Sink } from '../sink.ts';

export const codehostSink: Sink = {
  name: 'code host',
  kinds: ['codehost.queue'],
  phase: 'transaction',
  async handle(tx, { runnerId, events }) {
    const mine = new Set((await tx.query<{ id: string }>(sql`select id from projects where runner_id = ${runnerId}`)).map((p) => p.id));
    await queueEvents(tx, runnerId, events, mine);
  },
};
