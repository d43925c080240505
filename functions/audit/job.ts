// Nightly audit chain verification (spec: "A nightly job verifies the chain", AUDIT_VERIFY_CRON).
import type { Config } from '../lib/config.ts';
import type { JobDefinition } from '../jobs/scheduler.ts';
import { recordVerification, verifyChain } from './audit.ts';

export function auditJobs(config: Config): JobDefinition[] {
  return [
    {
      name: 'audit.verify',
      description: 'Verify the audit log hash chain from the first record to the last',
      cron: config.AUDIT_VERIFY_CRON,
      async run({ db, log, signal }) {
        const started = new Date();
        const v = await verifyChain(db, 5000, signal);
        await recordVerification(db, started, v);
        if (!v.ok) log.error('audit chain broken', { firstBrokenSeq: v.firstBrokenSeq, problem: v.problem });
        return { ok: v.ok, recordsChecked: v.recordsChecked, firstBrokenSeq: v.firstBrokenSeq };
      },
    },
  ];
}
