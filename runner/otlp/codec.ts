// The protobuf side of the OTLP receiver (runner/otlp.ts): decoding a logs request, mapping it, and
// encoding the answers. Made at the receiver's first request, not when the daemon starts, over the protobuf
// library and the generated descriptors (runner/otlp/proto.ts, loaded by proto-load.ts).
import type { JsonValue } from '@bufbuild/protobuf';
import { errorText } from '../log.ts';
import type { ExportLogsServiceRequest } from './gen/logs_service_pb.ts';
import { mapLogs } from './map.ts';
import type { Proto } from './proto-load.ts';

/** How a body is encoded, by its content type. */
export type Encoding = 'protobuf' | 'json';

class BadBody extends Error {}

export interface Codec {
  /** The mapped records of a logs body, or why the body cannot be decoded (a 400). */
  decodeLogs(body: Buffer, enc: Encoding, codexExperimental: boolean): { result: ReturnType<typeof mapLogs> } | { error: string };
  /** The ExportLogsServiceResponse, with the rejected count when there is one. */
  logsAnswer(enc: Encoding, rejected: number, errors: string[]): string | Uint8Array;
  /** A google.rpc.Status answer. */
  statusAnswer(enc: Encoding, code: number, message: string): string | Uint8Array;
}

/** The codec over the protobuf side `pb`. */
export function makeCodec(pb: typeof Proto): Codec {
  const { create, fromBinary, fromJson, toBinary, toJson, StatusSchema, ExportLogsServiceRequestSchema, ExportLogsServiceResponseSchema } = pb;

  function decode(body: Buffer, enc: Encoding): ExportLogsServiceRequest {
    if (enc === 'protobuf') {
      try {
        return fromBinary(ExportLogsServiceRequestSchema, body, { readUnknownFields: false });
      } catch (e) {
        throw new BadBody(`the body is not a protobuf ExportLogsServiceRequest (${errorText(e).slice(0, 200)})`);
      }
    }
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      throw new BadBody('the body is not valid JSON');
    }
    dropIds(json);
    try {
      return fromJson(ExportLogsServiceRequestSchema, json as JsonValue, { ignoreUnknownFields: true });
    } catch (e) {
      throw new BadBody(`the body is not an OTLP/JSON ExportLogsServiceRequest (${errorText(e).slice(0, 200)})`);
    }
  }

  return {
    decodeLogs(body, enc, codexExperimental) {
      let request: ExportLogsServiceRequest;
      try {
        request = decode(body, enc);
      } catch (e) {
        if (e instanceof BadBody) return { error: e.message };
        throw e;
      }
      return { result: mapLogs(request, { codexExperimental }) };
    },
    logsAnswer(enc, rejected, errors) {
      const answer = create(ExportLogsServiceResponseSchema, rejected ? { partialSuccess: { rejectedLogRecords: BigInt(rejected), errorMessage: errors.join('; ') } } : {});
      return enc === 'json' ? JSON.stringify(toJson(ExportLogsServiceResponseSchema, answer)) : toBinary(ExportLogsServiceResponseSchema, answer);
    },
    statusAnswer(enc, code, message) {
      const status = create(StatusSchema, { code, message });
      return enc === 'json' ? JSON.stringify(toJson(StatusSchema, status)) : toBinary(StatusSchema, status);
    },
  };
}

/** OTLP/JSON writes trace and span ids as hex, where the protobuf JSON mapping expects base64. The
 *  receiver never uses them: remove them before decoding, so a valid OTLP/JSON body is never refused. */
function dropIds(json: unknown): void {
  const list = (v: unknown) => (Array.isArray(v) ? v : []);
  const obj = (v: unknown) => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});
  for (const rl of list(obj(json).resourceLogs ?? obj(json).resource_logs))
    for (const sl of list(obj(rl).scopeLogs ?? obj(rl).scope_logs))
      for (const r of list(obj(sl).logRecords ?? obj(sl).log_records)) {
        const rec = obj(r);
        for (const k of ['traceId', 'trace_id', 'spanId', 'span_id']) delete rec[k];
      }
}
