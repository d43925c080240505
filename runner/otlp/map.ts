// OTLP log records → LLM requests (spec: Runner local OTLP receiver; protocol/usage.ts; reference:
// agent-formats.md §2 and §3). The receiver reads only what it needs and builds each payload from a
// short list of named attributes, so everything else a record carries — prompts, responses, tool input
// and output, e-mail, account and organization ids — is dropped here and never leaves the machine.
//
// Each runtime's records are described and mapped in runner/runtimes/<name>/otlp.ts (RuntimeDef.otlp).
// Resource attributes (or, failing those, record attributes) svc.project, svc.slot, svc.issue, svc.run
// attribute a request directly. Every other record is accepted and dropped. A record of a mapped kind
// that cannot be mapped (no model, no id, a count that is not a non-negative integer) is rejected: the
// receiver counts it in the answer's partialSuccess.
import { LLM_REQUEST, llmRequestPayload } from '../../protocol/usage.ts';
import type { LlmRequest } from '../../protocol/usage.ts';
import { RUNTIME_LIST } from '../runtimes/index.ts';
import { attrs, names, Unmappable } from './attrs.ts';
import type { MapOptions } from './attrs.ts';
import type { ExportLogsServiceRequest } from './gen/logs_service_pb.ts';

export { LLM_REQUEST };
export type { MapOptions };

export interface MapResult {
  requests: LlmRequest[];
  /** Records of a mapped kind that could not be mapped. */
  rejected: number;
  /** Why the first rejected records were rejected (for partialSuccess.errorMessage and the log). */
  errors: string[];
}

const MAX_ERRORS = 5;
const MAPPERS = RUNTIME_LIST.flatMap((r) => r.otlp);

export function mapLogs(req: ExportLogsServiceRequest, opts: MapOptions): MapResult {
  const now = opts.now ?? (() => new Date());
  const out: MapResult = { requests: [], rejected: 0, errors: [] };
  const reject = (why: string) => {
    out.rejected++;
    if (out.errors.length < MAX_ERRORS) out.errors.push(why);
  };
  for (const rl of req.resourceLogs) {
    const resource = attrs(rl.resource?.attributes ?? []);
    for (const sl of rl.scopeLogs) {
      for (const r of sl.logRecords) {
        const a = attrs(r.attributes);
        const n = names(r, a);
        const mapper = MAPPERS.find((m) => m.matches(n, a, opts));
        if (!mapper) continue;
        const kind = mapper.kind;
        let candidate: unknown;
        try {
          candidate = mapper.map(r, a, resource, now);
        } catch (e) {
          if (!(e instanceof Unmappable)) throw e;
          reject(`${kind}: ${e.message}`);
          continue;
        }
        const parsed = llmRequestPayload.safeParse(candidate);
        if (parsed.success) out.requests.push(parsed.data);
        else reject(`${kind}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`).join('; ')}`);
      }
    }
  }
  return out;
}
