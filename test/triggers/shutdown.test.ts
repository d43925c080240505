// Stopping a server while its trigger firer works through a stream of deliveries: the claim under way
// ends before the database pool closes, so SIGTERM exits 0 without an ERROR line.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTrigger, post, setup } from './_harness.ts';

test('SIGTERM while deliveries are being accepted and fired: exit 0, no ERROR line', async () => {
  const s = await setup({ env: { TRIGGER_RATE_PER_HOUR: '1000000' } }); // its runner stays offline: each delivery ends runner_offline
  try {
    const t = await createTrigger(s.server, s.projectId);
    let accepted = 0;
    let stopping: Promise<number | string> | null = null;
    const poster = async (w: number) => {
      for (let i = 0; i < 60 && !stopping; i++) {
        const r = await post(t.url, t.secret, { ref: 'main' }, { delivery: `d-${w}-${i}` }).catch(() => null);
        if (r?.status === 202 && ++accepted === 150 && !stopping) stopping = s.server.stop('SIGTERM'); // in the middle of the stream
      }
    };
    await Promise.all(Array.from({ length: 10 }, (_, w) => poster(w)));
    assert.ok(stopping, `150 deliveries were accepted before the stop (${accepted})`);
    assert.is(await stopping, 0);
    const errors = s.server.output().split('\n').filter((l) => /\bERROR\b/.test(l));
    assert.equal(errors, [], 'no ERROR at shutdown');
  } finally {
    await s.server.cleanup();
  }
});

test.run();
