// Helpers for the OTLP receiver tests: the real OpenTelemetry JS SDK as a client (sdk-logs with the
// protobuf or the JSON exporter), Claude Code-shaped records, raw HTTP requests, a free port.
import { request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPLogExporter as JsonExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';

/** Values a Claude Code export may carry that must never reach the spool. */
export const SECRETS = {
  prompt: 'PROMPT-please-refactor-the-billing-module-7f3a',
  response: 'RESPONSE-here-is-the-refactored-code-91bc',
  toolInput: 'TOOLINPUT-rm -rf /tmp/secret-dir-55e1',
  toolOutput: 'TOOLOUTPUT-contents-of-secret-file-c0de',
  email: 'dev.person@example.test',
  accountUuid: 'acct-uuid-1b2c3d4e-aaaa-bbbb-cccc-000000000001',
  orgId: 'org-id-9f8e7d6c-aaaa-bbbb-cccc-000000000002',
  userId: 'user-id-anon-5a5a5a5a5a5a5a5a5a5a',
} as const;

export type AttrValue = string | number | boolean;

/** The attributes every Claude Code event carries (the identifying ones included, to prove they are dropped). */
export const standard = (sessionId: string): Record<string, AttrValue> => ({
  'session.id': sessionId,
  'organization.id': SECRETS.orgId,
  'user.account_uuid': SECRETS.accountUuid,
  'user.id': SECRETS.userId,
  'user.email': SECRETS.email,
  'terminal.type': 'tmux',
  'prompt.id': 'prompt-1',
});

export interface ApiRequest {
  sessionId: string;
  requestId: string;
  model?: string;
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheCreation?: number;
  costUsd?: number;
  durationMs?: number;
}

export function apiRequestAttrs(r: ApiRequest): Record<string, AttrValue> {
  return {
    ...standard(r.sessionId),
    'event.name': 'api_request',
    'event.timestamp': '2026-11-20T10:00:00.000Z',
    'event.sequence': 3,
    ...(r.model === undefined ? {} : { model: r.model }),
    input_tokens: r.input ?? 0,
    output_tokens: r.output ?? 0,
    cache_read_tokens: r.cacheRead ?? 0,
    cache_creation_tokens: r.cacheCreation ?? 0,
    ...(r.costUsd === undefined ? {} : { cost_usd: r.costUsd }),
    ...(r.durationMs === undefined ? {} : { duration_ms: r.durationMs }),
    request_id: r.requestId,
    client_request_id: 'client-req-1',
    speed: 'normal',
    query_source: 'main',
  };
}

/** The other events of one prompt, carrying everything that must be dropped. */
export function sensitiveEvents(sessionId: string): { body: string; attributes: Record<string, AttrValue> }[] {
  return [
    { body: 'claude_code.user_prompt', attributes: { ...standard(sessionId), 'event.name': 'user_prompt', prompt_length: SECRETS.prompt.length, prompt: SECRETS.prompt } },
    { body: 'claude_code.assistant_response', attributes: { ...standard(sessionId), 'event.name': 'assistant_response', response: SECRETS.response, model: 'claude-sonnet-4-5', request_id: 'req_response_only' } },
    {
      body: 'claude_code.tool_result',
      attributes: { ...standard(sessionId), 'event.name': 'tool_result', tool_name: 'Bash', success: 'true', tool_input: SECRETS.toolInput, tool_parameters: SECRETS.toolInput, error: SECRETS.toolOutput },
    },
  ];
}

export interface SdkClient {
  emit: (body: string, attributes: Record<string, AttrValue>, time?: Date) => void;
  flush: () => Promise<void>;
  shutdown: () => Promise<void>;
}

/** A LoggerProvider exporting to `<base>/v1/logs` with the protobuf or the JSON exporter. */
export function sdkClient(base: string, kind: 'proto' | 'json', resource: Record<string, string> = {}, compression?: 'gzip'): SdkClient {
  const opts = { url: `${base}/v1/logs`, ...(compression ? { compression: compression as never } : {}) };
  const exporter = kind === 'proto' ? new ProtoExporter(opts) : new JsonExporter(opts);
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'claude-code', 'service.version': '2.1.0', ...resource }),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('com.anthropic.claude_code.events', '2.1.0');
  return {
    emit: (body, attributes, time = new Date('2026-11-20T10:00:00.000Z')) => logger.emit({ body, attributes, timestamp: time }),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

export { freePort } from '../helpers/ports.ts';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTP request with the whole body at once. */
export function raw(port: number, opts: { method?: string; path?: string; headers?: Record<string, string>; body?: Buffer | string }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: opts.method ?? 'POST', path: opts.path ?? '/v1/logs', headers: opts.headers ?? {}, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** An OTLP/JSON export of log records, int64 values written as strings as exporters do. */
export function jsonExport(records: { body?: string; attributes: Record<string, AttrValue>; timeUnixNano?: string }[], resource: Record<string, string> = {}): string {
  const value = (v: AttrValue) =>
    typeof v === 'string' ? { stringValue: v } : typeof v === 'boolean' ? { boolValue: v } : Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  const kvs = (o: Record<string, AttrValue>) => Object.entries(o).map(([key, v]) => ({ key, value: value(v) }));
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: kvs({ 'service.name': 'claude-code', ...resource }) },
        scopeLogs: [
          {
            scope: { name: 'com.anthropic.claude_code.events' },
            logRecords: records.map((r) => ({
              timeUnixNano: r.timeUnixNano ?? '1763632800000000000',
              observedTimeUnixNano: '1763632800001000000',
              severityNumber: 9,
              ...(r.body ? { body: { stringValue: r.body } } : {}),
              attributes: kvs(r.attributes),
              traceId: '5b8efff798038103d269b633813fc60c',
              spanId: 'eee19b7ec3c1b174',
            })),
          },
        ],
      },
    ],
  });
}
