// One-line structured logs on stdout: `time level msg key=value …`.
// Values under keys that name secrets are replaced, so a careless field never leaks one.
export type Level = 'debug' | 'info' | 'warn' | 'error';
const rank: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const SECRET_KEY = /token|secret|password|key|authorization|cookie/i;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(
  level: Level = 'info',
  base: Record<string, unknown> = {},
  write: (line: string) => void = (line) => process.stdout.write(line + '\n'),
): Logger {
  const emit = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (rank[lvl] < rank[level]) return;
    const parts = [new Date().toISOString(), lvl.toUpperCase(), msg];
    for (const [k, v] of Object.entries({ ...base, ...fields })) {
      if (v === undefined) continue;
      parts.push(`${k}=${format(k, v)}`);
    }
    write(parts.join(' '));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
  };
}

function format(key: string, value: unknown): string {
  if (SECRET_KEY.test(key)) return '[redacted]';
  if (value instanceof Error) return JSON.stringify(value.message);
  if (typeof value === 'string') return /^[\w.:/@+-]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/** A connection string with its password masked, for log lines. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '[unparseable url]';
  }
}
