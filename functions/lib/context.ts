// Routes are a table: each declares who may call it and the zod schemas of its path, query and body.
// The app (functions/app.ts) authenticates, authorizes and validates before a handler runs, and the
// OpenAPI document (functions/openapi.ts) is generated from the same table, so they cannot drift.
// The services in the context are narrow interfaces (RunnerHub, JobScheduler below; types of leaf modules
// for the trigger cache and schedules), so this file, which every route imports, imports no module that
// itself imports route code.
import type { z } from 'zod';
import type { CommandName } from '../../protocol/commands.ts';
import type { RunnerFrame, ServerFrame } from '../../protocol/frames.ts';
import type { RunOutcome, ScheduleRow } from '../schedules/schedules.ts';
import type { Clock } from './clock.ts';
import type { TriggerCache } from '../triggers/cache.ts';
import type { Config } from './config.ts';
import type { Db } from './db/index.ts';
import type { EncryptionKeyOrigin } from './keyfile.ts';
import type { Logger } from './log.ts';

export interface AppContext {
  config: Config;
  db: Db;
  log: Logger;
  scheduler: JobScheduler;
  keys: Keys;
  hub: RunnerHub;
  /** The server's clock (lib/clock.ts): trigger timestamps, rotation overlap, replay memory, rate bucket. */
  clock: Clock;
  /** Starts inbound trigger runs (functions/triggers/fire.ts); absent where nothing fires. */
  firer?: { kick(): void };
  /** Enabled triggers' verification material for POST /hooks/ (functions/triggers/cache.ts); absent = no cache. */
  triggers?: Pick<TriggerCache, 'get' | 'mark' | 'set' | 'invalidate'>;
  /** Who tokens and sessions are, for safe requests (functions/auth/principal-cache.ts); absent = no cache. */
  principals?: PrincipalStore;
  /** Runs project schedules (functions/schedules/runner.ts); absent where nothing runs. */
  schedules?: { kick(): void; runNow(s: ScheduleRow): Promise<RunOutcome | null> };
}

/** What the system jobs' API asks of the job scheduler (functions/jobs/scheduler.ts implements it). */
export interface JobScheduler {
  definitions(): { name: string; description: string; cron: string }[];
  nextRun(name: string): Date | null;
  /** Run a job now (admin "run now"): the time it runs as, or null when it did not. */
  runNow(name: string): Promise<Date | null>;
}

/** What a command sent to a runner came to (functions/runners/hub.ts). */
export type CommandOutcome =
  | { status: 'done'; data: unknown }
  | { status: 'failed'; error: { code: string; message: string } }
  | { status: 'timeout' }
  | { status: 'offline' };

/** A terminal frame from the runner toward the browser, and one from the browser toward the runner. */
export type TermFrame = Extract<RunnerFrame, { type: 'term.output' | 'term.exit' }>;
export type TermInput = Extract<ServerFrame, { type: 'term.input' | 'term.resize' | 'term.close' }>;

/** What handlers and background work ask of the runner hub (functions/runners/hub.ts implements it). */
export interface RunnerHub {
  /** Send a command to a runner, whichever API process holds its socket, and wait for its answer. */
  command(runnerId: string, name: CommandName, args: unknown, userId: string | null): Promise<CommandOutcome>;
  isOnline(runnerId: string): Promise<boolean>;
  disconnect(runnerId: string, code: number): Promise<void>;
  /** A project's runner or root changed: the runner's watch list is sent again. */
  projectsChanged(runnerId: string | null): Promise<void>;
  openTerminal(runnerId: string, channel: string, onFrame: (frame: TermFrame) => void): () => void;
  sendTerminal(runnerId: string, frame: TermInput): void;
}

/** Keys derived once at start: the session signing key and, when configured, the secrets key. */
export interface Keys {
  session: Uint8Array;
  /** 32-byte AES key from APP_ENCRYPTION_KEY (or the generated key file), or null when there is none. */
  encryption: Buffer | null;
  /** Where that key came from and its fingerprint (never the key), for the Settings page. */
  origin: EncryptionKeyOrigin;
}

export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export interface User {
  id: string;
  email: string;
  name: string;
  instanceAdmin: boolean;
}

export interface Principal {
  user: User;
  via: 'session' | 'token';
  sessionId?: string;
  tokenId?: string;
}

/** Who a token or session is, as the credentials' cache keeps it (functions/auth/principal-cache.ts). */
export interface CachedPrincipal {
  user: User;
  /** A token's id (via token) or a session's id (via session). */
  id: string;
  /** A token's last recorded use (ms), updated here when this process records a newer one. */
  lastUsedMs: number | null;
}

export interface PrincipalStore {
  get(key: string): CachedPrincipal | undefined;
  /** Before the read; pass it to set(). */
  mark(): number;
  /** Keep a credential read after `mark`, until the TTL or its own expiry (ms; null = none). */
  set(key: string, value: CachedPrincipal, mark: number, expiresMs: number | null): void;
  invalidate(): void;
}

/**
 * Who may call a route:
 * - `public`: anyone;
 * - `user`: any signed-in, active user;
 * - `instanceAdmin`: instance admins only;
 * - `{ projectRole, param }`: at least that role on the project named by the path parameter.
 */
export type Access = 'public' | 'user' | 'instanceAdmin' | { projectRole: Role; param: string };

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  request: Request;
  requestId: string;
  clientAddress: string;
  /** The TCP peer's address (X-Forwarded-For not considered). */
  peerAddress: string;
  /** Null only on public routes. */
  principal: Principal | null;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteDef<P extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  summary: string;
  tag: string;
  access: Access;
  params?: P;
  query?: Q;
  body?: B;
  /** Largest accepted body in bytes; default MAX_BODY_BYTES. */
  bodyLimit?: number;
  /**
   * The handler reads the raw request body itself (no `body` schema; the app neither checks its size
   * nor drains it): POST /hooks/<publicId> must check a signature over the exact bytes first.
   */
  rawBody?: boolean;
  /** The success status the handler answers (documented in OpenAPI); default 200. */
  status?: 200 | 201 | 202 | 204;
  /** Documented responses besides the error shape; `schema` describes a JSON body. */
  responses?: Record<number, { description: string; schema?: z.ZodType }>;
  handler(input: RouteInput<Out<P>, Out<Q>, Out<B>>, ctx: AppContext): Promise<Response> | Response;
}

// Erased form kept in route tables.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Route = RouteDef<any, any, any>;

/** Identity function that lets TypeScript infer the handler's input types from the schemas. */
export function route<P extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined>(
  def: RouteDef<P, Q, B>,
): Route {
  return def as Route;
}
