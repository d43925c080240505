// The server's `listening` log line (issue #34): the address it is bound to — 0.0.0.0 is every interface,
// not 127.0.0.1 — and the URL people should open: PUBLIC_URL when set. The test harness reads the port
// from the same line (`listening .*port=N`).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';

const line = (out: string) => /^.*\blistening\b.*$/m.exec(out)?.[0] ?? '';

test('bound to every interface: the line says so (bind=0.0.0.0:<port> (all interfaces)) and how others reach it', async () => {
  const s = await startServer({ env: { HOST: '0.0.0.0' } });
  try {
    const l = line(s.output());
    assert.match(l, `0.0.0.0:${s.port} (all interfaces)`);
    assert.match(l, `url=http://127.0.0.1:${s.port}`);
    assert.match(l, /PUBLIC_URL/);
    assert.is((await fetch(`http://127.0.0.1:${s.port}/health`)).status, 200);
  } finally {
    await s.cleanup();
  }
});

test('with PUBLIC_URL: the URL to open is PUBLIC_URL; bound to loopback only, no "all interfaces"', async () => {
  const s = await startServer({ env: { HOST: '127.0.0.1', PUBLIC_URL: 'https://svc.example.test' } });
  try {
    const l = line(s.output());
    assert.match(l, `127.0.0.1:${s.port}`);
    assert.match(l, 'url=https://svc.example.test');
    assert.not.match(l, /all interfaces|PUBLIC_URL/);
  } finally {
    await s.cleanup();
  }
});

test.run();
