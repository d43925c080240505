// Installation tokens minted per hour for a busy project (issue #36, Figures; part of `npm run
// bench:codehost`). The server's App token path — functions/codehost/app-token.ts through its caller
// checkApp (functions/codehost/app-check.ts, the handler of GET /api/github-apps/:appId/check?repo=…:
// it gets the repository's installation token and uses it on the repository, as a code-host command
// does) — against the fake GitHub's App endpoints (test/fakes/github-app.ts: it verifies the App JWT
// and mints tokens that expire after 60 minutes, as GitHub does), on a fresh PostgreSQL database.
//
// How the hours are simulated: the clock is simulated, not waited for. Each instance is a child process
// (this file, forked) with its own database pool and the App token code; its clock (the Clock the server
// injects into app-token.ts) is set by the parent before each command. The fake GitHub runs in the
// parent, whose Date.now is shifted by the same simulated offset, so GitHub's side (token expiry, JWT
// iat/exp checks) sees the same time. Every --every simulated seconds each instance runs one command
// for each of --repos repositories of one App installation (the instances at the same moment: the
// cross-process mint race the advisory lock settles), for --hours simulated hours. Counted: the tokens
// the fake minted, per repository: after each repository's first (cold) mint, the refreshes per hour,
// and the least simulated time between two mints of one repository.
// Baseline: the commands per repository per hour, i.e. what a token minted per command would cost.
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const KEY = Buffer.alloc(32, 11).toString('base64');

/** A child instance: its own pool, the server's token path, a clock the parent sets per command. */
async function instance(url) {
  const [{ openPostgres }, { checkApp }, { appRow }, { compileAllowlist }] = await Promise.all([
    import('../functions/lib/db/postgres.ts'),
    import('../functions/codehost/app-check.ts'),
    import('../functions/codehost/apps.ts'),
    import('../functions/webhooks/guard.ts'),
  ]);
  const db = await openPostgres(url, 4);
  let now = 0;
  const deps = { db, key: Buffer.from(KEY, 'base64'), clock: { now: () => now }, allowlist: compileAllowlist(['127.0.0.1']) };
  process.on('message', async (m) => {
    if (m.type === 'exit') {
      await db.close();
      process.exit(0);
    }
    now = m.now;
    const app = await appRow(db, m.appId);
    const r = await checkApp(deps, app, m.repo);
    process.send({ id: m.id, ok: r.ok, minted: r.repository?.minted ?? null, error: r.error?.message ?? null });
  });
  process.send({ ready: true });
}

if (process.env.SVC_BENCH_TOKEN_INSTANCE) await instance(process.env.SVC_BENCH_TOKEN_INSTANCE);

/** Runs the simulation for 1 and for 2 instances; returns the figures of each. */
export async function tokenFigures({ hours, every, repos }) {
  const { freshPostgres } = await import('../test/helpers/db.ts');
  const { openPostgres } = await import('../functions/lib/db/postgres.ts');
  const { loadMigrations, migrate } = await import('../functions/lib/db/migrate.ts');
  const { createLogger } = await import('../functions/lib/log.ts');
  const { encryptPrivateKey, encryptWebhookSecret, newPublicId, publicIdHash } = await import('../functions/codehost/apps.ts');
  const { insertApp } = await import('../functions/codehost/queries.ts');
  const { githubFake } = await import('../test/fakes/github.ts');
  const { ROOT } = await import('./lib.mjs');
  const realNow = Date.now;
  let offset = 0;
  Date.now = () => realNow() + offset;
  const results = [];
  try {
    for (const instances of [1, 2]) {
      const pg = await freshPostgres();
      const gh = await githubFake();
      const children = [];
      try {
        const db = await openPostgres(pg.url, 2);
        await migrate(db, loadMigrations(`${ROOT}/sql`), createLogger('error'));
        const key = Buffer.from(KEY, 'base64');
        const ghApp = gh.app.addApp();
        const names = Array.from({ length: repos }, (_, i) => `acme/busy${i}`);
        gh.app.install(ghApp.id, 'acme', names);
        for (const n of names) gh.repo(n);
        const appId = randomUUID();
        const publicId = newPublicId();
        await insertApp(db, { id: appId, name: 'bench', githubAppId: ghApp.id, publicId, publicIdHash: publicIdHash(publicId), webhookSecretCiphertext: encryptWebhookSecret(key, appId, 'x'), privateKeyCiphertext: encryptPrivateKey(key, appId, ghApp.pem), createdBy: null, apiUrl: gh.url });
        await db.close();
        for (let i = 0; i < instances; i++) {
          const child = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, SVC_BENCH_TOKEN_INSTANCE: pg.url }, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
          const waiting = new Map();
          child.on('message', (m) => (m.ready ? child.emit('ready') : (waiting.get(m.id)?.(m), waiting.delete(m.id))));
          await new Promise((r, j) => (child.once('ready', r), child.once('exit', (c) => j(new Error(`instance exited ${c}`)))));
          const ask = (msg) => new Promise((r) => (waiting.set(msg.id, r), child.send(msg)));
          children.push({ child, ask });
        }
        const start = realNow();
        offset = 0;
        let n = 0;
        let failed = 0;
        const steps = Math.round((hours * 3600) / every);
        for (let s = 0; s < steps; s++) {
          offset = s * every * 1000 - (realNow() - start); // the simulated time: s × every seconds since the start
          const now = Date.now();
          for (const repo of names) {
            const answers = await Promise.all(children.map((c) => c.ask({ id: ++n, now, appId, repo })));
            failed += answers.filter((a) => !a.ok).length;
            if (failed === 1 && answers.some((a) => !a.ok)) process.stderr.write(`a command failed: ${answers.find((a) => !a.ok).error}\n`);
          }
        }
        const t0 = start;
        const perRepo = names.map((r) => gh.app.minted.filter((m) => m.repositories[0] === r).map((m) => (m.at - t0) / 60_000));
        const gaps = perRepo.flatMap((ts) => ts.slice(1).map((t, i) => t - ts[i]));
        results.push({
          instances,
          repos,
          hours,
          everySeconds: every,
          commands: n,
          failed,
          minted: gh.app.minted.length,
          // The first mint of each repository is the cold start; the rate is that of the refreshes after it.
          refreshesPerRepoPerHour: +((gh.app.minted.length - repos) / repos / hours).toFixed(2),
          minMinutesBetweenMints: gaps.length ? +Math.min(...gaps).toFixed(2) : null,
          commandsPerRepoPerHour: Math.round(n / instances / repos / hours),
          mismatches: gh.openapi.mismatches.length,
          realSeconds: +((realNow() - start) / 1000).toFixed(1),
        });
      } finally {
        for (const c of children) c.child.send({ type: 'exit' });
        await Promise.all(children.map((c) => new Promise((r) => (c.child.exitCode !== null ? r() : c.child.once('exit', r)))));
        offset = 0;
        await gh.close();
        await pg.drop();
      }
    }
  } finally {
    Date.now = realNow;
  }
  return results;
}
