// What every handler receives besides the request.
import type { Scheduler } from '../jobs/scheduler.ts';
import type { Config } from './config.ts';
import type { Db } from './db/index.ts';
import type { Logger } from './log.ts';

export interface AppContext {
  config: Config;
  db: Db;
  log: Logger;
  scheduler: Scheduler;
}

export interface RouteRequest extends Request {
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  requestId: string;
}

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  handler: (request: RouteRequest, ctx: AppContext) => Promise<Response> | Response;
}
