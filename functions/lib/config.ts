// Configuration from the environment, validated once at start (DESIGN §4).
// A bad value stops the start with a message naming the variable — never the value of a secret.
import { isIP } from 'node:net';
import { Cron } from 'croner';
import * as z from 'zod';
import { httpUrl } from './http-url.ts';
import { humanIssue } from './issues.ts';

const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

const int = (fallback: number, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, { message: 'must be a whole number' })
    .default(String(fallback))
    .transform(Number)
    .pipe(z.number().int().min(min, { message: `must be at least ${min}` }).max(max, { message: `must be at most ${max}` }));

const cron = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .refine(
      (pattern) => {
        try {
          new Cron(pattern, { paused: true });
          return true;
        } catch {
          return false;
        }
      },
      { message: 'must be a cron pattern (5 or 6 fields, e.g. "30 4 * * *")' },
    );

const encryptionKey = z
  .string()
  .optional()
  .refine((v) => v === undefined || v === '' || decodedKeyLength(v) === 32, {
    message: 'must be 32 random bytes, base64-encoded (generate with: openssl rand -base64 32)',
  })
  .transform((v) => (v ? v : undefined));

function decodedKeyLength(value: string): number {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) return -1;
  return Buffer.from(value, 'base64').length;
}

/** A PostgreSQL memory size (`32MB`) in kB. */
const sizeKb = (v: string) => parseInt(v, 10) * ({ kB: 1, MB: 1024, GB: 1024 * 1024 } as const)[v.replace(/^\d+/, '') as 'kB' | 'MB' | 'GB'];
const within = (n: number, min: number, max: number) => n >= min && n <= max;

const databaseUrl = z
  .string()
  .optional()
  .transform((v) => (v ? v : undefined))
  .refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
    message: 'must start with postgres:// or postgresql://',
  });

/** A host name (RFC 1123 labels) or an IP literal, as `server.listen` takes it. */
export const isHostOrIp = (v: string): boolean =>
  isIP(v) !== 0 || (v.length <= 253 && /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(v));

/**
 * The base URL users and runners reach the server at: http(s), no credentials, query or fragment; a
 * path prefix is kept (behind a proxy at /svc/). Trailing slashes are dropped, so links are `base + path`.
 * Also checks the admin CLI's `--url`.
 */
export const publicUrl = httpUrl(z.string(), { query: false }, 'must be an http(s) URL without credentials, query or fragment (a path prefix is allowed)')
  .transform((s) => new URL(s).toString().replace(/\/+$/, ''));

const envShape = z.object({
    PORT: int(8080, 0, 65535),
    HOST: z.string().refine(isHostOrIp, { message: 'must be an IP address or a host name (e.g. 0.0.0.0, 127.0.0.1, ::)' }).default('0.0.0.0'),
    TRUST_PROXY: bool(false),
    PUBLIC_URL: publicUrl.optional(),
    DATABASE_URL: databaseUrl,
    DATABASE_DRIVER: z.enum(['pglite', 'postgres', 'neon']).optional(),
    DATABASE_POOL_MAX: int(10, 1, 200),
    DATABASE_CONNECT_TIMEOUT_SECONDS: int(300, 1, 86400),
    DATABASE_CONNECT_ATTEMPT_SECONDS: int(2, 1, 60),
    NEON_WS_PROXY: z.string().optional(),
    PGLITE_DATA_DIR: z.string().default('./data/pglite'),
    PGLITE_SHARED_BUFFERS: z
      .string()
      .regex(/^[1-9]\d{0,7}(kB|MB|GB)$/, { message: 'must be a size with its unit (kB, MB or GB), like 32MB' })
      .refine((v) => within(sizeKb(v), 128, 1024 * 1024), { message: 'must be between 128kB (PostgreSQL\'s minimum) and 1GB' })
      .default('32MB'),
    MIGRATIONS_DIR: z.string().optional(),
    WEB_DIR: z.string().optional(),
    APP_ENCRYPTION_KEY: encryptionKey,
    ACTIVITY_RETENTION_DAYS: int(180, 1, 36500),
    ACTIVITY_RETENTION_CRON: cron('30 4 * * *'),
    EVENTS_RETENTION_DAYS: int(30, 1, 36500),
    DELIVERY_RETENTION_CRON: cron('45 4 * * *'),
    CODEHOST_DELIVERY_RETENTION_CRON: cron('50 4 * * *'),
    AUDIT_VERIFY_CRON: cron('0 3 * * *'),
    AUDIT_CHECKPOINT_CRON: cron('17 * * * *'),
    AUDIT_ANCHOR_PATH: z.string().default('./data/audit-anchor.json'),
    HOUSEKEEPING_CRON: cron('55 4 * * *'),
    JOBS_ENABLED: bool(true),
    JOB_LEASE_SECONDS: int(60, 2, 3600),
    SCHEDULE_MAX_FAILURES: int(3, 1, 100),
    WEBHOOKS_WORKER_ENABLED: bool(true),
    WEBHOOKS_LEASE_SECONDS: int(30, 15, 600),
    MAX_BODY_BYTES: int(1048576, 1024, 104857600),
    LIVE_MAX_SOCKETS_PER_USER: int(20, 1, 10_000),
    TRIGGER_RATE_PER_HOUR: int(30, 1, 1_000_000),
    TRIGGER_BODY_TIMEOUT_SECONDS: int(10, 1, 300),
    TRIGGER_LEASE_SECONDS: int(60, 35, 600),
    POOL_LOSS_GRACE_SECONDS: int(120, 1, 86400),
    TEST_CLOCK_OFFSET_SECONDS: z
      .string()
      .regex(/^-?\d{1,10}$/, { message: 'must be a whole number of seconds' })
      .default('0')
      .transform(Number),
    SHUTDOWN_TIMEOUT_SECONDS: int(10, 0, 600),
    LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
    CHECK_ANSWERS: bool(false),
});

export const configSchema = envShape
  .transform((c) => ({
    ...c,
    DATABASE_DRIVER: c.DATABASE_DRIVER ?? inferDriver(c.DATABASE_URL),
  }))
  .superRefine((c, ctx) => {
    if (c.DATABASE_DRIVER !== 'pglite' && !c.DATABASE_URL) {
      ctx.addIssue({ code: 'custom', path: ['DATABASE_URL'], message: `is required when DATABASE_DRIVER=${c.DATABASE_DRIVER}` });
    }
  });

/** Every variable the service reads; the README's configuration table documents each. */
export const CONFIG_KEYS = Object.keys(envShape.shape);

export type Config = z.infer<typeof configSchema>;

function inferDriver(url: string | undefined): 'pglite' | 'postgres' | 'neon' {
  if (!url) return 'pglite';
  return /\.neon\.tech(:\d+)?\//.test(url) ? 'neon' : 'postgres';
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
}

/** Parse the environment. Empty strings count as unset, like docker's `VAR=` lines. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(envShape.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = configSchema.safeParse(input, { error: humanIssue });
  if (!parsed.success) {
    // zod messages describe the rule, never echo the value, so secrets cannot leak here.
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(config)'} ${i.message}`));
  }
  return parsed.data;
}
