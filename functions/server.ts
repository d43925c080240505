// The API process: config → database (with retry) → migrations → seed → scheduler → HTTP.
// Nothing listens until migrations and the seed succeeded, so /health is never ok on a broken schema.
// `node dist/server.mjs`                                   serve
// `node dist/server.mjs migrate`                           apply migrations and the seed, then exit
// `node dist/server.mjs admin create --email E [--name N]` create an instance admin, print a password link
// `node dist/server.mjs admin password-link --email E`     print a new one-time password link
//   (both take --url <base>; the link's base is --url, else PUBLIC_URL, else HOST:PORT; `admin --help`)
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VERSION } from '../protocol/version.ts';
import { ConfigError, loadConfig } from './lib/config.ts';
import type { Config } from './lib/config.ts';
import { connectWithRetry } from './lib/db/index.ts';
import type { Db } from './lib/db/index.ts';
import { loadMigrations, migrate } from './lib/db/migrate.ts';
import type { Migration } from './lib/db/migrate.ts';
import type { PgliteTemplate } from './lib/db/pglite.ts';
import { createLogger } from './lib/log.ts';
import type { Logger } from './lib/log.ts';
import { installSafetyNet } from './lib/safety-net.ts';
import { seed } from './seed.ts';

export function migrationsDir(config: Config): string {
  return resolve(config.MIGRATIONS_DIR ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'sql'));
}

/** dist/pglite-template/ and its manifest, written by the build (scripts/pglite-template.ts). */
export function pgliteTemplate(migrations: Migration[]): PgliteTemplate {
  const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
  return { dir: join(dist, 'pglite-template'), manifest: join(dist, 'pglite-template.json'), migrations };
}

/** Connected, migrated and seeded; `whileApplying`: see lib/db/migrate.ts. */
export async function prepareDatabase(config: Config, log: Logger, whileApplying?: () => void): Promise<Db> {
  const dir = migrationsDir(config);
  const migrations = loadMigrations(dir);
  const db = await connectWithRetry(config, log, undefined, pgliteTemplate(migrations));
  try {
    await migrate(db, migrations, log, { whileApplying });
    await seed(db, readFileSync(join(dir, 'seed.sql'), 'utf8'), log);
    return db;
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}

async function serve(config: Config, log: Logger): Promise<void> {
  // Signals first: a SIGTERM while connecting or migrating exits at once (the migration's transaction
  // rolls back); once serving, it drains. Installed before "listening" is logged, so no window where
  // the default action kills the process.
  let shutdown: ((signal: string) => Promise<void>) | undefined;
  const onSignal = (signal: string) => {
    if (shutdown) return void shutdown(signal);
    log.info('stopped during start-up', { signal });
    process.exit(0);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  // Errors nobody caught: logged; those escaping from webhook work never end the process, any other
  // still does (exit 1) — lib/safety-net.ts says why.
  installSafetyNet(log);

  // Most of the bundle (functions/serving.ts: the API, the hub, the workers) is compiled while the
  // database is connected and migrated: on a new PostgreSQL database its DDL runs meanwhile (lib/db/migrate.ts).
  let code: Promise<typeof import('./serving.ts')> | undefined;
  const load = () => {
    code ??= import('./serving.ts');
    code.catch(() => {}); // awaited below; a failure is reported there, after the database's own errors
    return code;
  };
  // Only where the database works in another process: PGlite runs its queries on this thread, so there
  // the code loads after them (compiling it meanwhile only made the start slower).
  const db = await prepareDatabase(config, log, config.DATABASE_DRIVER === 'pglite' ? undefined : load);
  const { startServing } = await load();
  await startServing(config, log, db, (fn) => (shutdown = fn));
}

const USAGE = `usage: server.mjs [serve | migrate | version | help]
       server.mjs admin create --email <e-mail> [--name <name>] [--url <base URL>]
       server.mjs admin password-link --email <e-mail> [--url <base URL>]

The admin commands print a one-time link to set the password (valid 24 hours). The link starts with
--url, else PUBLIC_URL, else the address the server listens on (HOST, PORT). With the embedded
database a running server runs them (over svc.sock in its data directory). The first admin can also
be made in the browser: while no user exists the server logs a one-time setup link.
`;

/** `help`, `--help`, `-h`, also after `admin`: the usage on stdout, whatever the configuration. */
const HELP = new Set(['help', '--help', '-h']);
const wantsHelp = (argv: string[]) => HELP.has(argv[0] ?? '') || (argv[0] === 'admin' && (HELP.has(argv[1] ?? '') || argv.includes('--help') || argv.includes('-h')));

async function main(argv: string[]): Promise<number> {
  if (wantsHelp(argv)) {
    process.stdout.write(USAGE);
    return 0;
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`svc: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const log = createLogger(config.LOG_LEVEL);
  const command = argv[0] ?? 'serve';
  try {
    if (command === 'serve') {
      await serve(config, log);
      return -1; // keep running
    }
    if (command === 'migrate') {
      const db = await prepareDatabase(config, log);
      await db.close();
      return 0;
    }
    if (command === 'admin') {
      const { runAdmin } = await import('./admin-cli.ts');
      return await runAdmin(config, log, argv.slice(1), USAGE, prepareDatabase);
    }
    if (command === 'version' || command === '--version') {
      process.stdout.write(`${VERSION}\n`);
      return 0;
    }
    process.stderr.write(`${USAGE}unknown command: ${command}\n`);
    return 2;
  } catch (err) {
    log.error('start failed', { error: err instanceof Error ? err.message : String(err) });
    return 1;
  }
}

main(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exit(code);
});
