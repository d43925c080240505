// Steady requests against a server while it is stopped (scripts/image-test.sh): 4 workers send GET / and
// GET /api/openapi.json back to back, each on a new connection, and a "balancer" polls /health every
// 200 ms; once it answers 503 (the server drains on SIGTERM) the workers send nothing new, as a client
// behind a balancer would. Every request sent must get an answer: one line of JSON on stdout,
// {"sent","answered","lost","statuses"}; `lost` counts requests whose connection ended without one.
// Stops by itself once the server drains or is gone, or after 60 s.
//   usage: node scripts/image-load.mjs <base URL>     prints "started" once the first answers came back
import { request } from 'node:http';

const base = process.argv[2];
const stats = { sent: 0, answered: 0, lost: 0, statuses: {} };
let sending = true;
let started = false;
const until = Date.now() + 60_000;

function get(path) {
  return new Promise((resolve) => {
    const req = request(`${base}${path}`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve(null));
    });
    req.on('error', (err) => resolve(err.code === 'ECONNREFUSED' ? 'refused' : null));
    req.end();
  });
}

async function worker() {
  for (let n = 0; sending && Date.now() < until; n++) {
    stats.sent++;
    const status = await get(n % 2 ? '/api/openapi.json' : '/');
    if (status === 'refused') { stats.sent--; sending = false; break; } // never reached the server: not sent
    if (status === null) stats.lost++;
    else {
      stats.answered++;
      stats.statuses[status] = (stats.statuses[status] ?? 0) + 1;
    }
    if (stats.answered >= 8 && !started) started = Boolean(process.stdout.write('started\n'));
  }
}

const balancer = (async () => {
  while (sending && Date.now() < until) {
    const s = await get('/health');
    if (s !== 200) sending = false; // 503 stopping, or gone: take the server out
    await new Promise((r) => setTimeout(r, 200));
  }
})();

await Promise.all([0, 1, 2, 3].map(worker).concat(balancer));
process.stdout.write(`${JSON.stringify(stats)}\n`);
process.exit(0);
