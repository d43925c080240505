// The runner's local OTLP/HTTP receiver (spec: Runner local OTLP receiver, runner.json `otlp.*`, Limits
// "OTLP body"; docs/runner.md "OTLP receiver"). Agents on this machine export their telemetry to
// http://127.0.0.1:<otlp.http>; the API-request records become `llm.request` events on the spool and
// everything else is dropped here (runner/otlp/map.ts).
//
//   POST /v1/logs      application/x-protobuf or application/json, optionally Content-Encoding: gzip.
//                      200 with an ExportLogsServiceResponse in the request's encoding; records of a
//                      mapped kind that could not be mapped are counted in its partialSuccess.
//   POST /v1/metrics,  accepted and discarded (read within the same limits, not decoded): 200 with the
//        /v1/traces    empty Export*ServiceResponse (no bytes in protobuf, `{}` in JSON).
//   Errors             a google.rpc.Status in the request's encoding (JSON when it has none we know):
//                      400 bad gzip / undecodable body, 404 other paths, 405 other methods, 413 body over
//                      4 MiB on the wire or over 16 MiB once unzipped (answered as soon as a limit is
//                      crossed; the rest of the body is read and discarded for at most 5 s, then the
//                      connection is closed), 415 other content types or encodings, 503 when the spool
//                      could not store the requests (the sender retries).
// Storing is a group commit: the requests of every body decoded in one turn of the event loop go to
// `onRequests` together, once, at the end of that turn (`setImmediate`), and each body is answered after
// that call returned — so a 200 still means "on disk", and bodies that arrived while the previous store
// was fsyncing share the next store's one file and fsync instead of paying one each.
// Only loopback connections are served: the socket is bound to 127.0.0.1 and any other peer is
// disconnected at once. Decoding uses @bufbuild/protobuf with code generated from the OTLP .proto files
// (runner/otlp/gen, `npm run gen:otlp`), in runner/otlp/codec.ts, which is made at the first request:
// its descriptors and the protobuf runtime are a good part of an idle daemon's heap, and in the runner
// bundle they are embedded gzipped (runner/otlp/proto-load.ts; docs/performance.md).
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createGunzip } from 'node:zlib';
import { LLM_REQUEST } from '../protocol/usage.ts';
import type { LlmRequest } from '../protocol/usage.ts';
import { errorText, log } from './log.ts';
import type { NewEvent } from './spool.ts';
import type { Codec, Encoding } from './otlp/codec.ts';

export const OTLP_HOST = '127.0.0.1';
export { DEFAULT_OTLP_PORT } from './otlp/state.ts';
/** Limits "OTLP body": the body as sent. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** The body once unzipped: a small gzip body may not grow past this (a gzip bomb is refused). */
export const MAX_DECODED_BYTES = 16 * 1024 * 1024;
/** After an early answer, the rest of the body is read and thrown away for this long at most. */
const LINGER_MS = 5_000;

/** google.rpc.Code values used in error answers. */
const RPC = { invalidArgument: 3, notFound: 5, resourceExhausted: 8, unimplemented: 12, internal: 13, unavailable: 14 } as const;


let codec: Promise<Codec> | undefined;
/** The protobuf side, made once, when the first request comes. */
const loadCodec = () => (codec ??= Promise.all([import('./otlp/codec.ts'), import('./otlp/proto-load.ts').then((p) => p.loadProto())]).then(([c, pb]) => c.makeCodec(pb)));
type Signal = 'logs' | 'metrics' | 'traces';
const SIGNALS: Record<string, Signal> = { '/v1/logs': 'logs', '/v1/metrics': 'metrics', '/v1/traces': 'traces' };
const CONTENT_TYPE: Record<Encoding, string> = { protobuf: 'application/x-protobuf', json: 'application/json' };

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ReceiverOptions {
  port: number;
  codexExperimental: boolean;
  /**
   * Stores the mapped requests durably; throws when they could not be stored (every sender in the group
   * is told to retry). Called once per event-loop turn with the requests of all the bodies decoded in it,
   * in arrival order; a record sent twice may appear twice in one call.
   */
  onRequests: (requests: LlmRequest[]) => void;
  maxBodyBytes?: number;
  maxDecodedBytes?: number;
}

/** Whether a peer address is on the loopback network (127.0.0.0/8, ::1, or either mapped into IPv6). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase();
  return a === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

function encodingOf(contentType: string | undefined): Encoding | null {
  const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return media === 'application/x-protobuf' ? 'protobuf' : media === 'application/json' ? 'json' : null;
}

export class OtlpReceiver {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly maxBody: number;
  private readonly maxDecoded: number;
  /** Bodies decoded in this turn, waiting for the end-of-turn store (see `store`). */
  private waiting: { requests: LlmRequest[]; stored: (failed: boolean) => void }[] = [];

  constructor(private readonly opts: ReceiverOptions) {
    this.maxBody = opts.maxBodyBytes ?? MAX_BODY_BYTES;
    this.maxDecoded = opts.maxDecodedBytes ?? MAX_DECODED_BYTES;
  }

  /** Bind 127.0.0.1:<port>; rejects with the bind error (EADDRINUSE, EACCES…). Resolves the port bound. */
  listen(): Promise<number> {
    const server = createServer({ requestTimeout: 60_000, headersTimeout: 10_000 }, (req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 5_000;
    server.on('connection', (socket: Socket) => {
      if (!isLoopback(socket.remoteAddress)) {
        socket.destroy();
        return;
      }
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port, OTLP_HOST, () => {
        server.off('error', reject);
        server.on('error', (e) => log.error('OTLP receiver error', { error: errorText(e) }));
        this.server = server;
        const address = server.address();
        resolve(typeof address === 'object' && address ? address.port : this.opts.port);
      });
    });
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return Promise.resolve();
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const enc = encodingOf(req.headers['content-type']);
    try {
      const signal = SIGNALS[(req.url ?? '').split('?')[0]!];
      if (!signal) throw new HttpError(404, RPC.notFound, 'not found: the receiver serves POST /v1/logs, /v1/metrics and /v1/traces');
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        throw new HttpError(405, RPC.unimplemented, `method ${req.method} is not allowed: use POST`);
      }
      if (!enc) throw new HttpError(415, RPC.invalidArgument, 'content-type must be application/x-protobuf or application/json');
      const ce = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
      if (ce !== 'gzip' && ce !== 'identity') throw new HttpError(415, RPC.invalidArgument, 'content-encoding must be gzip or absent');
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > this.maxBody) throw tooLarge(this.maxBody);
      const body = await this.readBody(req, ce === 'gzip');
      if (signal !== 'logs') return send(res, 200, enc, enc === 'json' ? '{}' : new Uint8Array());
      const c = await loadCodec();
      const decoded = c.decodeLogs(body, enc, this.opts.codexExperimental);
      if ('error' in decoded) throw new HttpError(400, RPC.invalidArgument, decoded.error);
      const result = decoded.result;
      if (result.requests.length) {
        const failed = await this.store(result.requests);
        if (failed) throw new HttpError(503, RPC.unavailable, 'the runner could not store the records; retry later');
      }
      if (result.rejected) log.warn('OTLP: records that could not be mapped were rejected', { rejected: result.rejected, reasons: result.errors });
      send(res, 200, enc, c.logsAnswer(enc, result.rejected, result.errors));
    } catch (e) {
      const err = e instanceof HttpError ? e : new HttpError(500, RPC.internal, 'internal error');
      if (!(e instanceof HttpError)) log.error('OTLP: request failed', { error: errorText(e) });
      else log.debug('OTLP: request refused', { status: err.status, path: req.url?.slice(0, 64) });
      const out = enc ?? 'json';
      if (!req.complete) linger(req);
      const status = (await loadCodec()).statusAnswer(out, err.code, err.message);
      if (!res.headersSent && !res.destroyed) send(res, err.status, out, status);
    }
  }

  /**
   * Resolves once `onRequests` has stored these requests together with those of every other body decoded
   * in this turn (false), or failed to (true, logged once for the group).
   */
  private store(requests: LlmRequest[]): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.waiting.push({ requests, stored: resolve }) === 1) setImmediate(() => this.storeWaiting());
    });
  }

  private storeWaiting(): void {
    const group = this.waiting;
    this.waiting = [];
    let failed = false;
    try {
      this.opts.onRequests(group.length === 1 ? group[0]!.requests : group.flatMap((g) => g.requests));
    } catch (e) {
      failed = true;
      log.error('OTLP: the LLM requests could not be written to the spool; the senders will retry', { error: errorText(e), bodies: group.length });
    }
    for (const g of group) g.stored(failed);
  }

  /** The body, unzipped when asked, refused with 413 as soon as a limit is crossed (never held whole). */
  private readBody(req: IncomingMessage, gzip: boolean): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let wire = 0;
      let size = 0;
      let done = false;
      const gunzip = gzip ? createGunzip() : null;
      const stop = () => {
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('aborted', onAborted);
        gunzip?.removeAllListeners('data');
        gunzip?.destroy();
      };
      const fail = (e: HttpError) => {
        if (done) return;
        done = true;
        stop();
        chunks.length = 0;
        reject(e);
      };
      const finish = () => {
        if (done) return;
        done = true;
        stop();
        resolve(Buffer.concat(chunks, size));
      };
      const collect = (c: Buffer) => {
        size += c.length;
        if (size > this.maxDecoded) return fail(new HttpError(413, RPC.resourceExhausted, `the unzipped body is larger than ${this.maxDecoded} bytes`));
        chunks.push(c);
      };
      const onData = (c: Buffer) => {
        wire += c.length;
        if (wire > this.maxBody) return fail(tooLarge(this.maxBody));
        if (!gunzip) return collect(c);
        if (!gunzip.write(c)) {
          req.pause();
          gunzip.once('drain', () => !done && req.resume());
        }
      };
      const onEnd = () => (gunzip ? gunzip.end() : finish());
      const onAborted = () => fail(new HttpError(400, RPC.invalidArgument, 'the request was aborted'));
      if (gunzip) {
        gunzip.on('data', collect);
        gunzip.on('error', () => fail(new HttpError(400, RPC.invalidArgument, 'the body is not valid gzip')));
        gunzip.on('end', finish);
      }
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('aborted', onAborted);
    });
  }
}

const tooLarge = (max: number) => new HttpError(413, RPC.resourceExhausted, `the body is larger than ${max} bytes`);

/** Read and discard what is left of a body after an early answer, for LINGER_MS at most, so the answer
 *  reaches a sender that is still writing (closing at once would reset the connection under it). */
function linger(req: IncomingMessage): void {
  req.removeAllListeners('data');
  req.on('data', () => {});
  req.resume();
  const timer = setTimeout(() => req.socket.destroy(), LINGER_MS);
  timer.unref();
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
}

function send(res: ServerResponse, status: number, enc: Encoding, body: string | Uint8Array): void {
  res.writeHead(status, { 'content-type': CONTENT_TYPE[enc], 'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength });
  res.end(body);
}

/** The spool events for mapped requests: one `llm.request` each, with an id derived from its dedup key,
 *  so a record sent again is stored once by the server (and, while the daemon runs, spooled once). */
export function spoolEvents(requests: LlmRequest[], prefix: string): (NewEvent & { id: string })[] {
  return requests.map((r) => ({
    id: `${prefix}.otlp.${createHash('sha256').update(r.key).digest('hex').slice(0, 32)}`,
    source: 'otlp',
    kind: LLM_REQUEST,
    ts: r.at,
    payload: r as unknown as Record<string, unknown>,
  }));
}

/** Ids spooled recently, so a sender's retry of a batch it already delivered is not written again. */
export class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly max = 20_000) {}
  /** The events whose ids were not spooled recently, each once (one store may hold a record sent twice). */
  unseen<E extends { id: string }>(events: E[]): E[] {
    const once = new Set<string>();
    return events.filter((e) => !this.ids.has(e.id) && !once.has(e.id) && Boolean(once.add(e.id)));
  }
  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value!);
  }
}
