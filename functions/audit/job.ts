// Nightly audit chain verification (spec: "A nightly job verifies the chain", AUDIT_VERIFY_CRON): the
// whole chain from record 1, against the last checkpoints; it writes the next checkpoint (checkpoint.ts).
import type { Config } from '../lib/config.ts';
import type { JobDefinition } from '../jobs/scheduler.ts';
import type { AuditAnchor } from './checkpoint.ts';

export function auditJobs(config: Config, anchor: AuditAnchor): JobDefinition[] {
  return [
    {
      name: 'audit.verify',
      description: 'Verify the audit log hash chain from the first record to the last, against its last checkpoint',
      cron: config.AUDIT_VERIFY_CRON,
      async run({ log, signal }) {
        const v = await anchor.run('full', signal, log);
        return { ok: v.ok, recordsChecked: v.recordsChecked, firstBrokenSeq: v.firstBrokenSeq };
      },
    },
  ];
}
