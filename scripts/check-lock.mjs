// `npm start`'s first step (package.json prestart), before the rebuild: with the embedded database, is
// another process (a running server, `admin` CLI) holding it? Then say so in one line and stop, instead
// of rebuilding for a minute and failing after. The server's own lock (functions/lib/db/pglite.ts,
// `svc.lock` with the owner's pid) stays the real guard; this only reads it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const env = process.env;
const embedded = env.DATABASE_DRIVER ? env.DATABASE_DRIVER === 'pglite' : !env.DATABASE_URL;
if (embedded) {
  const dir = env.PGLITE_DATA_DIR || './data/pglite';
  let pid = 0;
  try {
    pid = Number(readFileSync(join(dir, 'svc.lock'), 'utf8'));
  } catch {
    // no lock: nobody holds it
  }
  if (pid && pid !== process.pid && alive(pid)) {
    console.error(`svc: the embedded database in ${dir} is in use by process ${pid} (a running svc server?): stop it first, then run npm start again.`);
    process.exit(1);
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM'; // it exists, owned by someone else
  }
}
