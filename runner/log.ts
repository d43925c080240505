// The daemon's log: one line per entry on stderr, `<time> <level> <message> <json fields>`.
// Secrets registered with `redact` (the runner token) are replaced wherever they would appear.
const secrets = new Set<string>();

export function redact(secret: string | undefined): void {
  if (secret && secret.length >= 8) secrets.add(secret);
}

function scrub(text: string): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('[redacted]');
  return out;
}

type Level = 'debug' | 'info' | 'warn' | 'error';
let quiet = new Set<Level>(process.env.SVC_LOG === 'debug' ? [] : ['debug']);

export function setLogLevel(level: Level): void {
  const order: Level[] = ['debug', 'info', 'warn', 'error'];
  quiet = new Set(order.slice(0, order.indexOf(level)));
}

function write(level: Level, message: string, fields?: Record<string, unknown>): void {
  if (quiet.has(level)) return;
  const extra = fields && Object.keys(fields).length ? ' ' + JSON.stringify(fields) : '';
  process.stderr.write(scrub(`${new Date().toISOString()} ${level} ${message}${extra}`) + '\n');
}

export const log = {
  debug: (m: string, f?: Record<string, unknown>) => write('debug', m, f),
  info: (m: string, f?: Record<string, unknown>) => write('info', m, f),
  warn: (m: string, f?: Record<string, unknown>) => write('warn', m, f),
  error: (m: string, f?: Record<string, unknown>) => write('error', m, f),
};

export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
