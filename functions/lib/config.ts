// Configuration from the environment, validated once at start (DESIGN §4).
// A bad value stops the start with a message naming the variable — never the value of a secret.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Cron } from 'croner';
import * as z from 'zod';
import { httpUrl, isLoopback } from './http-url.ts';
import { humanIssue } from './issues.ts';
import { networkEntries, parseNetwork } from './networks.ts';

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

const list = (item: z.ZodType<string, string>, message: string) =>
  z
    .string()
    .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(item, { message }))
    .optional();

const ROLE_NAMES = ['viewer', 'operator', 'admin'] as const;

/** `{"group": {"projectId or name": "viewer" | "operator" | "admin"}}` (OIDC_PROJECT_ROLES). */
const projectRoles = z
  .string()
  .transform((v, ctx) => {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON: {"group": {"project id or name": "viewer" | "operator" | "admin"}}' });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().min(1).max(256), z.record(z.string().min(1).max(200), z.enum(ROLE_NAMES, { message: 'must map each project to viewer, operator or admin' }))))
  .optional();

/** Single sign-on (functions/auth/oidc/): the provider, the claims to read and who may use passwords. */
const oidcShape = () => ({
  OIDC_ISSUER: z
    .string()
    .refine(isIssuerUrl, { message: 'must be an https:// URL without query or fragment (http:// only on a loopback address)' })
    .transform((s) => s.replace(/\/+$/, ''))
    .optional(),
  OIDC_CLIENT_ID: z.string().max(512).optional(),
  OIDC_CLIENT_SECRET: z.string().max(4096).optional(),
  OIDC_SCOPES: z
    .string()
    .default('openid email profile')
    .refine((v) => v.split(/\s+/).includes('openid'), { message: 'must include openid' })
    .refine((v) => /^[\x21\x23-\x5b\x5d-\x7e ]+$/.test(v), { message: 'must be scope names separated by spaces' }),
  OIDC_BUTTON_TEXT: z.string().trim().min(1).max(80).default('Sign in with single sign-on'),
  OIDC_ALLOWED_DOMAINS: list(z.string().regex(/^[a-z0-9.-]+\.[a-z]{2,}$/i, { message: 'bad domain' }).transform((d) => d.toLowerCase()), 'must be e-mail domains separated by commas (example.com,example.org)'),
  OIDC_GROUPS_CLAIM: z.string().min(1).max(200).default('groups'),
  OIDC_ADMIN_GROUPS: list(z.string().min(1).max(256), 'must be group names separated by commas'),
  OIDC_PROJECT_ROLES: projectRoles,
  OIDC_SESSION_HOURS: int(12, 1, 720),
  OIDC_JWKS_COOLDOWN_SECONDS: int(60, 1, 3600),
  PASSWORD_SIGNIN: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
  BREAK_GLASS_EMAIL: z.email({ message: 'must be an e-mail address' }).transform((e) => e.toLowerCase()).optional(),
});

function isIssuerUrl(text: string): boolean {
  try {
    const u = new URL(text);
    if (u.username || u.password || u.search || u.hash || text.includes('#') || text.includes('?')) return false;
    return u.protocol === 'https:' || (u.protocol === 'http:' && isLoopback(u.hostname));
  } catch {
    return false;
  }
}

function isPemFile(path: string | undefined): boolean {
  if (path === undefined) return true;
  try {
    return readFileSync(path, 'utf8').includes('-----BEGIN CERTIFICATE-----');
  } catch {
    return false;
  }
}

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
    // A self-managed code host's own CA (PEM), trusted for code-host calls only (functions/codehost/gitlab-check.ts).
    CODEHOST_CA_FILE: z.string().optional().refine(isPemFile, { message: 'must be a readable PEM file with at least one certificate (-----BEGIN CERTIFICATE-----)' }),
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
    ...oidcShape(),
    // GET /metrics (functions/metrics/): off (404) unless one of these is set.
    METRICS_TOKEN: z.string().min(16, { message: 'must be at least 16 characters (generate with: openssl rand -hex 24)' }).optional(),
    METRICS_ALLOW: z
      .string()
      .optional()
      .refine((v) => v === undefined || (networkEntries(v).length > 0 && networkEntries(v).every((e) => parseNetwork(e) !== null)), {
        message: 'must list networks as CIDRs or IP addresses, separated by commas (e.g. 10.0.0.0/8, 127.0.0.1)',
      }),
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
    if (c.OIDC_ISSUER && !c.OIDC_CLIENT_ID) ctx.addIssue({ code: 'custom', path: ['OIDC_CLIENT_ID'], message: 'is required when OIDC_ISSUER is set' });
    if (c.PASSWORD_SIGNIN === 'off' && !c.OIDC_ISSUER) {
      ctx.addIssue({ code: 'custom', path: ['PASSWORD_SIGNIN'], message: 'can be off only when OIDC_ISSUER is set (nobody could sign in otherwise)' });
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
