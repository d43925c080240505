// Routes are a table: each declares who may call it and the zod schemas of its path, query and body.
// The app (functions/app.ts) authenticates, authorizes and validates before a handler runs, and the
// OpenAPI document (functions/openapi.ts) is generated from the same table, so they cannot drift.
import type { z } from 'zod';
import type { Scheduler } from '../jobs/scheduler.ts';
import type { ScheduleRunner } from '../schedules/runner.ts';
import type { Hub } from '../runners/hub.ts';
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
  scheduler: Scheduler;
  keys: Keys;
  hub: Hub;
  /** The server's clock (lib/clock.ts): trigger timestamps, rotation overlap, replay memory, rate bucket. */
  clock: Clock;
  /** Starts inbound trigger runs (functions/triggers/fire.ts); absent where nothing fires. */
  firer?: { kick(): void };
  /** Enabled triggers' verification material for POST /hooks/ (functions/triggers/cache.ts); absent = no cache. */
  triggers?: Pick<TriggerCache, 'get' | 'mark' | 'set' | 'invalidate'>;
  /** Runs project schedules (functions/schedules/runner.ts); absent where nothing runs. */
  schedules?: Pick<ScheduleRunner, 'kick' | 'runNow'>;
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
