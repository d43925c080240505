// `node dist/server.mjs admin create | password-link`: the real CLI against a real database, then a
// real server to prove the printed links work. On PGlite also the svc.lock and the admin socket: a server
// holding the data directory runs the CLI's commands over its owner-only socket; without that socket the
// CLI refuses the directory (naming the server's pid); a stale lock does not block a start.
import { existsSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import postgres from 'postgres';
import { openPglite } from '../../functions/lib/db/pglite.ts';
import { sql } from '../../functions/lib/db/port.ts';
import { TEST_DB, onlyOn, serverDbEnv } from '../helpers/db.ts';
import { adminCli, startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';

const EMAIL = 'x@example.test';
const USAGE = /usage: server\.mjs[\s\S]*admin create --email <e-mail> \[--name <name>\][\s\S]*admin password-link --email <e-mail>/;

let dbEnv: Record<string, string>;
let drop: () => Promise<void>;
const servers: RunningServer[] = [];

const linkOf = (stdout: string) => {
  const m = /^(\S+#\/set-password\?token=([\w-]+))$/m.exec(stdout);
  assert.ok(m, `a link in:\n${stdout}`);
  return { url: m![1], token: m![2] };
};
const out = (r: ReturnType<typeof adminCli>) => `${r.stdout}${r.stderr}`;

async function start(env: Record<string, string> = {}) {
  const s = await startServer({ dbEnv, env });
  servers.push(s);
  return s;
}

async function stop(s: RunningServer) {
  assert.is(await s.stop(), 0, 'the server stops cleanly');
  await s.cleanup();
}

const post = (s: RunningServer, path: string, body: unknown) =>
  fetch(s.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const signIn = (s: RunningServer, email: string, password: string) => post(s, '/api/session', { email, password });

test.before(async () => {
  const fresh = await serverDbEnv();
  dbEnv = fresh.env;
  drop = fresh.cleanup;
});
test.after(async () => {
  for (const s of servers) await s.cleanup();
  await drop?.();
});

let firstLink: { url: string; token: string };
let secondLink: { url: string; token: string };

test('admin create --email → exit 0 and a one-time set-password link on the address the server listens on, with a loopback warning', () => {
  const r = adminCli(dbEnv, ['create', '--email', EMAIL], { HOST: '127.0.0.1', PORT: '8080' });
  assert.is(r.status, 0, out(r));
  assert.match(r.stdout, /Created instance admin x@example\.test\./);
  assert.match(r.stdout, /within 24 hours/);
  firstLink = linkOf(r.stdout);
  assert.match(firstLink.url, /^http:\/\/127\.0\.0\.1:8080\/#\/set-password\?token=[\w-]{40,}$/, 'HOST:PORT without PUBLIC_URL');
  assert.match(r.stderr, /^admin: warning: this link uses 127\.0\.0\.1:8080, a loopback address: .*--url .*PUBLIC_URL/m);
});

test('PUBLIC_URL sets the origin of the printed link; --name and a mixed-case e-mail are taken', () => {
  const r = adminCli(dbEnv, ['create', '--email', 'Second.Admin@Example.TEST', '--name', 'Second Admin'], { PUBLIC_URL: 'https://svc.example.test/' });
  assert.is(r.status, 0, out(r));
  assert.match(r.stdout, /second\.admin@example\.test/);
  assert.match(linkOf(r.stdout).url, /^https:\/\/svc\.example\.test\/#\/set-password\?token=/);
});

test('creating the same e-mail again (any case) → non-zero exit, says it exists, prints no link', () => {
  for (const email of [EMAIL, 'X@EXAMPLE.test', `  ${EMAIL}  `]) {
    const r = adminCli(dbEnv, ['create', '--email', email]);
    assert.is.not(r.status, 0, `${email}: ${out(r)}`);
    assert.match(out(r), /exists/, email);
    assert.not.match(out(r), /set-password\?token=/, 'no link');
  }
});

test('missing or invalid --email, or an unknown subcommand → exit 2 with the usage', () => {
  const cases = [
    ['create'],
    ['create', '--email'],
    ['create', '--email', ''],
    ['create', '--email', 'not-an-email'],
    ['create', '--email', 'two words@example.test'],
    ['create', '--name', 'Nobody'],
    ['password-link'],
    ['password-link', '--email', 'nope'],
    ['delete', '--email', 'y@example.test'],
    ['--email', 'y@example.test'],
    [],
  ];
  for (const args of cases) {
    const r = adminCli(dbEnv, args);
    assert.is(r.status, 2, `admin ${args.join(' ')}: ${out(r)}`);
    assert.match(r.stderr, USAGE, `admin ${args.join(' ')} prints the usage`);
    assert.not.match(r.stdout, /set-password/, 'no link');
  }
});

test('password-link for an unknown e-mail → exit 1 naming it, labelled admin: (not "start failed"), no link', () => {
  const r = adminCli(dbEnv, ['password-link', '--email', 'ghost@example.test']);
  assert.is(r.status, 1, out(r));
  assert.match(r.stderr, /^admin: no user with e-mail ghost@example\.test$/m);
  assert.not.match(out(r), /start failed/);
  assert.not.match(out(r), /set-password\?token=/);
});

test('password-link --email for an existing user → exit 0 and a new, different link', () => {
  const r = adminCli(dbEnv, ['password-link', '--email', 'X@Example.Test']);
  assert.is(r.status, 0, out(r));
  assert.match(r.stdout, /Password link for x@example\.test\./);
  secondLink = linkOf(r.stdout);
  assert.is.not(secondLink.token, firstLink.token);
});

test('with a server started after the CLI: the old link works once, then 400 invalid_link; the new one works; sign-in works', async () => {
  const s = await start();
  try {
    const pw1 = 'first password 123';
    const pw2 = 'second password 456';
    const useOld = await post(s, '/api/password', { token: firstLink.token, password: pw1 });
    assert.is(useOld.status, 200, await useOld.clone().text());
    assert.is((await useOld.json()).passwordSet, true);
    const reuse = await post(s, '/api/password', { token: firstLink.token, password: 'attacker password 1' });
    assert.is(reuse.status, 400);
    assert.is((await reuse.json()).error.code, 'invalid_link');
    assert.is((await signIn(s, EMAIL, 'attacker password 1')).status, 401, 'the refused reuse did not set a password');

    const first = await signIn(s, EMAIL, pw1);
    assert.is(first.status, 200);
    const cookie = first.headers.get('set-cookie')!.split(';')[0];
    const me = await (await fetch(`${s.url}/api/me`, { headers: { cookie } })).json();
    assert.is(me.user.email, EMAIL);
    assert.is(me.user.instanceAdmin, true, 'the CLI makes an instance admin');
    assert.is(me.user.name, 'x', 'name defaults to the local part');

    const useNew = await post(s, '/api/password', { token: secondLink.token, password: pw2 });
    assert.is(useNew.status, 200);
    assert.is((await post(s, '/api/password', { token: secondLink.token, password: pw2 })).status, 400, 'the new link is one-time too');
    assert.is((await signIn(s, EMAIL, pw1)).status, 401, 'the old password is gone');
    assert.is((await signIn(s, EMAIL, pw2)).status, 200);
    assert.is((await fetch(`${s.url}/api/me`, { headers: { cookie } })).status, 401, 'setting a password ended the older session');

    // The CLI's actions are in the audit log, as the CLI.
    const session = await signIn(s, EMAIL, pw2);
    const adminCookie = session.headers.get('set-cookie')!.split(';')[0];
    const audit = await (await fetch(`${s.url}/api/audit?action=user.password_link`, { headers: { cookie: adminCookie } })).json();
    assert.is(audit.records.length, 1);
    assert.is(audit.records[0].actorLabel, 'cli');
    const users = await (await fetch(`${s.url}/api/users`, { headers: { cookie: adminCookie } })).json();
    assert.equal(users.users.map((u: { email: string }) => u.email).sort(), ['second.admin@example.test', EMAIL], 'no user from the refused commands');
    assert.is(users.users.find((u: { email: string }) => u.email === 'second.admin@example.test').name, 'Second Admin');
  } finally {
    await stop(s);
  }
});

/** users.name straight from the database (PGlite: only while no server holds it). */
async function storedName(email: string): Promise<string | undefined> {
  if (TEST_DB === 'postgres') {
    const db = postgres(dbEnv.DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      return (await db`select name from users where email = ${email}`)[0]?.name;
    } finally {
      await db.end();
    }
  }
  const db = await openPglite(dbEnv.PGLITE_DATA_DIR);
  try {
    return (await db.query<{ name: string }>(sql`select name from users where email = ${email}`))[0]?.name;
  } finally {
    await db.close();
  }
}

test('an empty or blank --name is refused (exit 2) or replaced by a default, never stored blank (the API refuses blank names)', async () => {
  for (const [email, args] of [
    ['blank1@example.test', ['--name', '']],
    ['blank2@example.test', ['--name', '   ']],
    ['blank3@example.test', ['--name']],
  ] as const) {
    const r = adminCli(dbEnv, ['create', '--email', email, ...args]);
    const name = await storedName(email);
    if (r.status === 2) {
      assert.is(name, undefined, `${email}: refused, so not created`);
    } else {
      assert.is(r.status, 0, out(r));
      assert.ok(name !== undefined && name.trim().length > 0, `${email} ${JSON.stringify(args)}: stored name is ${JSON.stringify(name)}`);
    }
  }
});

onlyOn('pglite', test, 4, () => {
  test('PGlite: while a server holds the data dir, admin create and password-link run in it over its owner-only socket; the links work', async () => {
    const s = await start();
    try {
      const lockFile = join(dbEnv.PGLITE_DATA_DIR, 'svc.lock');
      const socket = join(dbEnv.PGLITE_DATA_DIR, 'svc.sock');
      assert.is(readFileSync(lockFile, 'utf8').trim(), String(s.proc.pid), 'the lock names the server');
      assert.is(statSync(socket).mode & 0o777, 0o600, 'the socket is owner-only');
      assert.is(statSync(dbEnv.PGLITE_DATA_DIR).mode & 0o777, 0o700, 'so is the data dir');
      const r = adminCli(dbEnv, ['create', '--email', 'while-running@example.test', '--name', 'While Running']);
      assert.is(r.status, 0, out(r));
      assert.match(r.stdout, /Created instance admin while-running@example\.test\./);
      const made = linkOf(r.stdout);
      assert.ok(made.url.startsWith(`${s.url}/#/set-password?token=`), `the server's own address: ${made.url}`);
      assert.match(r.stderr, /warning: this link uses 127\.0\.0\.1:\d+, a loopback address/);
      const reset = adminCli(dbEnv, ['password-link', '--email', 'While-Running@example.test', '--url', 'https://svc.example.test/x/']);
      assert.is(reset.status, 0, out(reset));
      assert.match(linkOf(reset.stdout).url, /^https:\/\/svc\.example\.test\/x\/#\/set-password\?token=/, '--url is kept');
      assert.not.match(reset.stderr, /warning/);
      const dup = adminCli(dbEnv, ['create', '--email', 'while-running@example.test']);
      assert.is(dup.status, 1, out(dup));
      assert.match(dup.stderr, /^admin: a user with e-mail while-running@example\.test exists already$/m);
      const ghost = adminCli(dbEnv, ['password-link', '--email', 'ghost@example.test']);
      assert.is(ghost.status, 1);
      assert.match(ghost.stderr, /^admin: no user with e-mail ghost@example\.test$/m);

      assert.is(readFileSync(lockFile, 'utf8').trim(), String(s.proc.pid), 'the CLI did not take or remove the lock');
      assert.is((await post(s, '/api/password', { token: made.token, password: 'while running 123' })).status, 200);
      const session = await signIn(s, 'while-running@example.test', 'while running 123');
      assert.is(session.status, 200, 'the admin made over the socket signs in');
      const cookie = session.headers.get('set-cookie')!.split(';')[0];
      const me = await (await fetch(`${s.url}/api/me`, { headers: { cookie } })).json();
      assert.equal([me.user.name, me.user.instanceAdmin], ['While Running', true]);
      const audit = await (await fetch(`${s.url}/api/audit?action=user.create`, { headers: { cookie } })).json();
      assert.ok(audit.records.some((a: { targetId: string; actorLabel: string }) => a.actorLabel === 'cli' && a.targetId === me.user.id), 'audited as the CLI');
    } finally {
      assert.is(await s.stop('SIGTERM'), 0);
      await s.cleanup();
    }
    assert.not.ok(existsSync(join(dbEnv.PGLITE_DATA_DIR, 'svc.lock')), 'a clean stop removes the lock');
    assert.not.ok(existsSync(join(dbEnv.PGLITE_DATA_DIR, 'svc.sock')), 'and the socket');
  });

  test('PGlite: a server without its socket (removed) → the CLI refuses naming the server pid, in one line; the server keeps working', async () => {
    const s = await start();
    try {
      rmSync(join(dbEnv.PGLITE_DATA_DIR, 'svc.sock'));
      const r = adminCli(dbEnv, ['create', '--email', 'no-socket@example.test']);
      assert.is(r.status, 1, out(r));
      assert.ok(out(r).includes(`in use by process ${s.proc.pid}`), out(r));
      assert.match(out(r), /embedded database/);
      assert.is(r.stderr.trim().split('\n').length, 1, 'one line');
      assert.not.match(out(r), /set-password\?token=/);
      assert.is((await fetch(`${s.url}/health`)).status, 200);
      const session = await signIn(s, EMAIL, 'second password 456');
      assert.is(session.status, 200, 'the database still answers');
      const cookie = session.headers.get('set-cookie')!.split(';')[0];
      const users = await (await fetch(`${s.url}/api/users`, { headers: { cookie } })).json();
      assert.not.ok(users.users.some((u: { email: string }) => u.email === 'no-socket@example.test'), 'nothing was created');
    } finally {
      await stop(s);
    }
    const after = adminCli(dbEnv, ['create', '--email', 'no-socket@example.test']);
    assert.is(after.status, 0, out(after));
    linkOf(after.stdout);
    assert.not.ok(existsSync(join(dbEnv.PGLITE_DATA_DIR, 'svc.lock')), 'the CLI released the lock too');
  });

  test('PGlite: a stale svc.lock (a pid that does not exist) blocks neither the CLI nor a start', async () => {
    let pid = 999999;
    const exists = (p: number) => {
      try {
        process.kill(p, 0);
        return true;
      } catch (err) {
        return (err as NodeJS.ErrnoException).code === 'EPERM';
      }
    };
    while (exists(pid)) pid++;
    const lockFile = join(dbEnv.PGLITE_DATA_DIR, 'svc.lock');
    writeFileSync(lockFile, String(pid));
    const r = adminCli(dbEnv, ['password-link', '--email', EMAIL]);
    assert.is(r.status, 0, out(r));
    linkOf(r.stdout);
    assert.not.ok(existsSync(lockFile), 'the stale lock was taken over and released');

    writeFileSync(lockFile, String(pid));
    const s = await start();
    try {
      assert.is((await fetch(`${s.url}/health`)).status, 200);
      assert.is(readFileSync(lockFile, 'utf8').trim(), String(s.proc.pid), 'the server took the lock over');
      assert.is((await signIn(s, EMAIL, 'second password 456')).status, 200, 'same data');
    } finally {
      await stop(s);
    }
  });

  test('PGlite: an empty svc.lock is a process writing its pid (refused) unless it is old (taken over)', async () => {
    const lockFile = join(dbEnv.PGLITE_DATA_DIR, 'svc.lock');
    writeFileSync(lockFile, '');
    const r = adminCli(dbEnv, ['password-link', '--email', EMAIL]);
    assert.is.not(r.status, 0, out(r));
    assert.ok(out(r).includes('in use by process (starting)'), out(r));
    assert.ok(existsSync(lockFile), 'the fresh empty lock was left alone');
    const old = new Date(Date.now() - 60_000);
    utimesSync(lockFile, old, old);
    const again = adminCli(dbEnv, ['password-link', '--email', EMAIL]);
    assert.is(again.status, 0, out(again));
    assert.not.ok(existsSync(lockFile), 'the old empty lock was taken over and released');
  });
});

onlyOn('postgres', test, 1, () => {
  test('PostgreSQL: the CLI works while a server runs on the same database, and the server sees the new admin', async () => {
    const s = await start();
    try {
      const r = adminCli(dbEnv, ['create', '--email', 'live@example.test']);
      assert.is(r.status, 0, out(r));
      const link = linkOf(r.stdout);
      assert.is((await post(s, '/api/password', { token: link.token, password: 'live password 789' })).status, 200);
      assert.is((await signIn(s, 'live@example.test', 'live password 789')).status, 200);
    } finally {
      await stop(s);
    }
  });
});

// Where the link points (issue 12, item 6). These run last: the tests above count users and audit records.
const LINK_USER = 'links@example.test';

test('HOST 0.0.0.0 or :: → 127.0.0.1 in the link with the loopback warning; a named host and port → that, no warning', () => {
  const made = adminCli(dbEnv, ['create', '--email', LINK_USER], { HOST: '0.0.0.0', PORT: '9123' });
  assert.is(made.status, 0, out(made));
  assert.match(linkOf(made.stdout).url, /^http:\/\/127\.0\.0\.1:9123\/#\/set-password\?token=/);
  assert.match(made.stderr, /admin: warning: this link uses 127\.0\.0\.1:9123, a loopback address/);
  const v6 = adminCli(dbEnv, ['password-link', '--email', LINK_USER], { HOST: '::', PORT: '9124' });
  assert.match(linkOf(v6.stdout).url, /^http:\/\/127\.0\.0\.1:9124\/#/);
  assert.match(v6.stderr, /loopback/);
  const named = adminCli(dbEnv, ['password-link', '--email', LINK_USER], { HOST: 'svc-host.internal', PORT: '9000' });
  assert.is(named.status, 0, out(named));
  assert.match(linkOf(named.stdout).url, /^http:\/\/svc-host\.internal:9000\/#\/set-password\?token=/);
  assert.not.match(named.stderr, /warning/);
});

test('PORT=0 (a free port picked at start) → the link warns that its port is unknown and names --url', () => {
  const r = adminCli(dbEnv, ['password-link', '--email', LINK_USER], { HOST: '127.0.0.1', PORT: '0' });
  assert.is(r.status, 0, out(r));
  assert.match(r.stderr, /admin: warning: PORT=0 .*--url/);
});

test('PUBLIC_URL with a path prefix is kept in the link, without a warning; --url overrides it', () => {
  const prefixed = adminCli(dbEnv, ['password-link', '--email', LINK_USER], { PUBLIC_URL: 'https://svc.example.test/tools/svc/' });
  assert.is(prefixed.status, 0, out(prefixed));
  assert.match(linkOf(prefixed.stdout).url, /^https:\/\/svc\.example\.test\/tools\/svc\/#\/set-password\?token=[\w-]+$/);
  assert.not.match(prefixed.stderr, /warning/);
  const override = adminCli(dbEnv, ['password-link', '--email', LINK_USER, '--url', 'http://10.0.0.5:8080/svc'], { PUBLIC_URL: 'https://svc.example.test/' });
  assert.is(override.status, 0, out(override));
  assert.match(linkOf(override.stdout).url, /^http:\/\/10\.0\.0\.5:8080\/svc\/#\/set-password\?token=/);
  assert.not.match(override.stderr, /warning/);
  const loop = adminCli(dbEnv, ['password-link', '--email', LINK_USER, '--url', 'http://localhost:8080']);
  assert.match(loop.stderr, /warning: this link uses localhost:8080, a loopback address/, '--url on loopback warns too');
});

for (const bad of ['ftp://svc.example.test/', 'https://user:pw@svc.example.test/', 'https://svc.example.test/?a=1', 'https://svc.example.test/#top', 'not a url', '']) {
  test(`--url ${JSON.stringify(bad)} → exit 2 naming --url, nothing created, no link`, async () => {
    const email = `bad-url-${Buffer.from(bad).toString('hex').slice(0, 12)}@example.test`;
    const r = adminCli(dbEnv, ['create', '--email', email, '--url', bad]);
    assert.is(r.status, 2, out(r));
    assert.match(r.stderr, /^admin: --url must be an http\(s\) URL without credentials, query or fragment/m);
    assert.not.match(out(r), /set-password|start failed/);
    assert.is(await storedName(email), undefined, 'not created');
  });
}

test('admin --help, admin help, admin -h, --help → exit 0 with the usage (and --url) on stdout, even with a bad setting', () => {
  for (const args of [['--help'], ['help'], ['-h'], ['create', '--help']]) {
    const r = adminCli(dbEnv, args, { PORT: 'eighty' });
    assert.is(r.status, 0, `admin ${args.join(' ')}: ${out(r)}`);
    assert.match(r.stdout, USAGE);
    assert.match(r.stdout, /--url <base URL>/);
    assert.is(r.stderr, '');
  }
});

test('links the server builds keep PUBLIC_URL\'s path prefix (invitation, reset, installer); without PUBLIC_URL they use the address the request came to', async () => {
  const invite = async (s: RunningServer, email: string) => {
    const session = await signIn(s, EMAIL, 'second password 456');
    assert.is(session.status, 200);
    const { csrfToken } = await session.json();
    const headers = { 'content-type': 'application/json', cookie: session.headers.get('set-cookie')!.split(';')[0], 'x-csrf-token': csrfToken };
    const made = await (await fetch(`${s.url}/api/users`, { method: 'POST', headers, body: JSON.stringify({ email, name: 'Link' }) })).json();
    const reset = await (await fetch(`${s.url}/api/users/${made.user.id}/password-link`, { method: 'POST', headers })).json();
    return [made.passwordSetUrl as string, reset.passwordSetUrl as string];
  };
  const prefixed = await start({ PUBLIC_URL: 'https://svc.example.test/tools/svc/' });
  try {
    for (const url of await invite(prefixed, 'invited1@example.test')) assert.match(url, /^https:\/\/svc\.example\.test\/tools\/svc\/#\/set-password\?token=[\w-]+$/);
    assert.match(await (await fetch(`${prefixed.url}/install-runner.sh`)).text(), /^BASE='https:\/\/svc\.example\.test\/tools\/svc'$/m);
  } finally {
    await stop(prefixed);
  }
  const plain = await start();
  try {
    for (const url of await invite(plain, 'invited2@example.test')) assert.ok(url.startsWith(`${plain.url}/#/set-password?token=`), url);
  } finally {
    await stop(plain);
  }
});

test.run();
