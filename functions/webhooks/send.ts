// One delivery attempt on the wire (spec: Limits → Outbound attempt; Outbound address guard rule 3):
// POST (or another method: the GitHub App calls of functions/codehost/ use it through request.ts) to
// the address the guard checked (a pinned lookup, so no second DNS query can swap it; TLS SNI
// and the Host header stay the URL's name), one deadline for the whole attempt, redirects never
// followed, and at most 2 KB of the answer read before the connection is closed. Every error of the
// attempt (lookup, connect, TLS, write, read, even a synchronous throw while the request is made) ends
// as the attempt's result, never as an exception: a receiver must not be able to stop the process.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

export const ATTEMPT_TIMEOUT_MS = 10_000;
export const MAX_RESPONSE_BODY = 2048;

export interface SendInput {
  url: URL;
  /** The checked address to connect to, and its family. */
  address: string;
  family: 4 | 6;
  headers: Record<string, string>;
  /** The request body; none for a GET. */
  body?: string;
  /** POST unless told. */
  method?: 'GET' | 'POST';
  /** How much of the answer is read before the connection is closed; MAX_RESPONSE_BODY unless told. */
  maxBody?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Extra TLS options (tests pass a CA for a local https receiver). */
  tls?: https.RequestOptions;
}

export type SendError = 'timeout' | 'connection_refused' | 'connection_reset' | 'connection_error' | 'tls_error' | 'aborted';

export interface SendResult {
  /** The receiver's status, when it answered at all. */
  status: number | null;
  /** Up to MAX_RESPONSE_BODY (or `maxBody`) bytes of the answer, as text. */
  body: string | null;
  /** Why there is no status (or why the answer was cut short before any byte arrived). */
  error: SendError | null;
  detail: string | null;
  ms: number;
}

/** Connect errors of an address this machine cannot reach at all; they fail before any packet leaves. */
const UNREACHABLE: Record<string, string> = {
  ENETUNREACH: 'no route to its network',
  EHOSTUNREACH: 'no route to the host',
  EADDRNOTAVAIL: 'no local address can reach it (e.g. an IPv6 address on a host without IPv6)',
  EAFNOSUPPORT: 'this host does not support its address family',
  EPROTONOSUPPORT: 'this host does not support its address family',
  EINVAL: 'the address cannot be connected to from here',
};

function classify(err: NodeJS.ErrnoException): SendError {
  if (err.code === 'ECONNREFUSED') return 'connection_refused';
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.message === 'socket hang up') return 'connection_reset';
  if (/CERT|SSL|TLS|self[- ]signed/i.test(`${err.code ?? ''} ${err.message}`)) return 'tls_error';
  return 'connection_error';
}

/** What the attempt log says about an error: the unreachable cases in words, with their code. */
function describe(err: NodeJS.ErrnoException, address: string): string {
  const why = err.code && UNREACHABLE[err.code];
  return why ? `cannot connect to ${address}: ${why} (${err.code})` : err.message;
}

/** Text of the first bytes of an answer: invalid UTF-8 replaced, NUL dropped (PostgreSQL text refuses it). */
function bodyText(chunks: Buffer[], max: number): string {
  return new TextDecoder('utf-8').decode(Buffer.concat(chunks).subarray(0, max)).replace(/\u0000/g, '');
}

export function send(input: SendInput): Promise<SendResult> {
  const started = performance.now();
  const { url } = input;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = host === input.address;
  const maxBody = input.maxBody ?? MAX_RESPONSE_BODY;
  // Called by net.connect instead of DNS: the answer is always the address the guard checked. It
  // answers later, like a real lookup: answered at once, a connect that fails at once (ENETUNREACH)
  // emits its error before the request listens for it, and the error escaped as an uncaught exception.
  const pinned: LookupFunction = (_name, options, callback) => {
    setImmediate(() => {
      if ((options as { all?: boolean }).all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: input.address, family: input.family }]);
      else callback(null, input.address, input.family);
    });
  };
  const options: https.RequestOptions = {
    method: input.method ?? 'POST',
    hostname: literal ? input.address : host,
    port: url.port || (url.protocol === 'https:' ? 443 : 80),
    path: `${url.pathname}${url.search}`,
    headers: { ...input.headers, host: url.host, ...(input.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(input.body)) }) },
    agent: false, // a fresh connection per attempt: never a socket opened for another address
    ...(literal ? {} : { lookup: pinned, servername: host }),
    ...input.tls,
  };
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    let status: number | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    let req: http.ClientRequest | undefined;
    const finish = (error: SendError | null, detail: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      input.signal?.removeEventListener('abort', onAbort);
      req?.destroy(); // close the connection: nothing more is read, whatever the receiver still sends
      resolve({ status, body: status === null ? null : bodyText(chunks, maxBody), error, detail, ms: Math.round(performance.now() - started) });
    };
    const failed = (err: NodeJS.ErrnoException) => finish(status === null ? classify(err) : null, status === null ? describe(err, input.address) : null);
    const onAbort = () => finish('aborted', 'the attempt was stopped (server shutting down)');
    const timer = setTimeout(
      () => finish(status === null ? 'timeout' : null, status === null ? `no answer within ${input.timeoutMs ?? ATTEMPT_TIMEOUT_MS} ms` : null),
      input.timeoutMs ?? ATTEMPT_TIMEOUT_MS,
    );
    try {
      req = (url.protocol === 'https:' ? https : http).request(options, (res) => {
        status = res.statusCode ?? null;
        res.on('data', (chunk: Buffer) => {
          if (size < maxBody) chunks.push(chunk);
          size += chunk.length;
          if (size >= maxBody) finish(null, null);
        });
        res.on('end', () => finish(null, null));
        res.on('error', () => finish(null, null)); // the status is known; a cut body does not change it
      });
      req.on('error', failed);
      if (input.signal?.aborted) return onAbort();
      input.signal?.addEventListener('abort', onAbort);
      req.end(input.body);
    } catch (err) {
      failed(err as NodeJS.ErrnoException); // thrown while the request was made: this attempt's failure all the same
    }
  });
}
