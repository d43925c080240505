// The audit log: filtered, cursor-paged listing, and the latest chain verification.
import { json } from '../lib/errors.ts';
import * as z from 'zod';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { auditPage, verificationState } from '../../protocol/api/audit.ts';
import type { VerificationState } from '../../protocol/api/audit.ts';
import { toRecord } from './audit.ts';
import { checkpointHead, latestVerification, listAuditRecords } from './queries.ts';

const isoTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 time' });

export const auditQuery = z.strictObject({
  actor: z.string().max(64).optional(),
  action: z.string().regex(/^[a-z_.]{1,64}$/, { message: 'must be an action name like project.update' }).optional(),
  targetType: z.string().regex(/^[a-z_]{1,64}$/).optional(),
  targetId: z.string().max(200).optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
  cursor: z.string().regex(/^\d{1,18}$/, { message: 'must be the nextCursor of a previous page' }).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/audit', tag: 'audit', access: 'instanceAdmin',
    summary: 'Audit records, newest first; filter by actor, action, target and time; page with nextCursor',
    query: auditQuery,
    responses: { 200: { description: 'a page of records, newest first', schema: auditPage } },
    async handler({ query: q }, ctx) {
      const rows = await listAuditRecords(ctx.db, q, q.limit + 1);
      const page = rows.slice(0, q.limit).map(toRecord);
      return json({ records: page, nextCursor: rows.length > q.limit ? String(page[page.length - 1].seq) : null });
    },
  }),
  route({ method: 'GET', path: '/api/audit/verification', tag: 'audit', access: 'instanceAdmin',
    summary: 'The latest audit chain verification (whole chain, or since the last checkpoint): ok, or what is wrong (reason chain_broken, or other_instance: the anchor file is another database\'s), and when',
    responses: { 200: { description: 'the latest verification and the next scheduled one', schema: verificationState } },
    async handler(_input, ctx) {
      const v = await latestVerification(ctx.db);
      // How far the chain is verified: the checkpoint a successful run wrote (a since-checkpoint run checks
      // only the records after the previous one, so recordsChecked alone undersells it).
      const verifiedThroughSeq = v?.ok ? await checkpointHead(ctx.db, v.finished_at) : null;
      const answer: VerificationState = {
        verification: v
          ? {
              ok: v.ok,
              recordsChecked: Number(v.records_checked),
              verifiedThroughSeq,
              firstBrokenSeq: v.first_broken_seq === null ? null : Number(v.first_broken_seq),
              problem: v.problem,
              // Rows of earlier releases have no reason: every failure then was a chain check's.
              reason: v.reason ?? (v.ok ? null : 'chain_broken'),
              scope: v.scope,
              startedAt: new Date(v.started_at).toISOString(),
              finishedAt: new Date(v.finished_at).toISOString(),
            }
          : null,
        nextRunAt: ctx.scheduler.nextRun('audit.verify')?.toISOString() ?? null,
      };
      return json(answer);
    },
  }),
];
