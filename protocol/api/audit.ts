// Answers of the audit API (docs/audit.md): the shapes functions/audit/routes.ts sends (declared in its
// `responses`, so CHECK_ANSWERS holds the handlers to them) and web-static/pages/audit.ts reads (type
// imports only, so zod stays out of the pages' bundle).
import * as z from 'zod';
import { cursor, iso } from './common.ts';

/** One audit record with its place in the hash chain. */
export const auditRecordAnswer = z.object({
  seq: z.number().int(),
  at: iso,
  actorId: z.string().nullable(),
  actorLabel: z.string(),
  action: z.string(),
  targetType: z.string(),
  targetId: z.string().nullable(),
  diff: z.unknown(),
  requestId: z.string().nullable(),
  prevHash: z.string(), hash: z.string(),
});
export type AuditRecordAnswer = z.output<typeof auditRecordAnswer>;

/** GET /api/audit: a page of records, newest first; nextCursor null on the last page. */
export const auditPage = z.object({ records: z.array(auditRecordAnswer), nextCursor: cursor });
export type AuditPage = z.output<typeof auditPage>;

/** The latest chain verification: ok, or what is wrong (other_instance: the anchor file is another database's). */
export const verificationAnswer = z.object({
  ok: z.boolean(),
  recordsChecked: z.number().int(),
  /** The head of the chain this successful run checkpointed (null for a failed run). */
  verifiedThroughSeq: z.number().int().nullable(),
  firstBrokenSeq: z.number().int().nullable(),
  problem: z.string().nullable(),
  reason: z.enum(['chain_broken', 'other_instance']).nullable(),
  scope: z.string(),
  startedAt: iso,
  finishedAt: iso,
});
export type VerificationAnswer = z.output<typeof verificationAnswer>;

/** GET /api/audit/verification: the latest verification (null before the first) and the next scheduled one. */
export const verificationState = z.object({ verification: verificationAnswer.nullable(), nextRunAt: iso.nullable() });
export type VerificationState = z.output<typeof verificationState>;
