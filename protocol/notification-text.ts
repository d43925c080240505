// The one line of text a notification reads as (spec: Notifications): the chat push the server renders
// (functions/notifications/notify.ts) and the admin pages' notification list (web-static/pages/notifications.ts)
// say the same sentence. Pure, shared by both sides.

export interface NotificationText {
  kind: string;
  projectName?: string | null;
  data: Record<string, unknown>;
}

const money = (v: unknown) => (typeof v === 'number' ? v.toFixed(2) : str(v));
const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');

/** One line of plain text per notification (no pane text ever reaches a notification's data). */
export function notificationText(n: NotificationText): string {
  const d = n.data;
  const where = n.projectName ? ` [${n.projectName}]` : '';
  switch (n.kind) {
    case 'runner.offline':
      return `Runner ${str(d.name) || str(d.runnerId)} has been offline since ${str(d.lastSeenAt)}`;
    case 'budget.threshold':
      return `Budget${where}: ${str(d.threshold)} % reached (${str(d.costUsd)} of ${str(d.budgetUsd)} USD this month)${d.stopped ? '; new runs are stopped' : ''}`;
    case 'pane.quota_hit':
      return `Quota hit${where}: a session of ${str(d.provider) || 'its provider'} reached its usage limit${d.resetsAt ? `; resets at ${str(d.resetsAt)}` : ''}`;
    case 'person.needed':
      return `A person is needed${where}${d.question ? `: ${str(d.question)}` : d.summary ? `: ${str(d.summary)}` : ''}`;
    case 'audit.verification_failed':
      return `Audit log verification failed (${str(d.problem)}${d.firstBrokenSeq ? `, first broken record ${str(d.firstBrokenSeq)}` : ''})`;
    case 'run.start_failed':
      return `A run did not start${where}: ${str(d.source)} ${str(d.sourceName)}${d.skill ? ` (skill ${str(d.skill)})` : ''}: ${str(d.words) || str(d.reason)}${d.remedy ? `. ${str(d.remedy)}` : ''}`;
    case 'run.queue_timeout':
      return `Run ${str(d.runId)} (${str(d.skill)}) found no pool runner${where}${d.reason ? `: ${str(d.reason)}` : ''}`;
    case 'pr.ready':
      return `Pull request #${str((d.pr as { number?: unknown } | undefined)?.number)} is ready for review${where}${d.title ? `: ${str(d.title)}` : ''}${d.checks ? ` (${str(d.checks)})` : ''}`;
    case 'run.failed':
      return `Run ${str(d.runId)} (${str(d.skill)}) ${str(d.state) === 'timed_out' ? 'timed out' : 'failed'}${where}${d.sourceName ? `, started by trigger ${str(d.sourceName)}` : ''}${d.error ? `: ${str(d.error)}` : ''}`;
    case 'cap.warning':
      return `Cost cap${where}: ${d.unit === 'run' ? `run ${str(d.runId)}` : `issue #${str(d.issue)}`} is at ${str(d.percent)} % of its cap ($${money(d.costUsd)} of $${money(d.capUsd)})`;
    case 'cap.reached':
      return d.unit === 'run'
        ? `Cost cap${where}: run ${str(d.runId)} reached its cap ($${money(d.costUsd)} of $${money(d.capUsd)}) and was cancelled`
        : `Cost cap${where}: issue #${str(d.issue)} reached its cap ($${money(d.costUsd)} of $${money(d.capUsd)}); its slot ${str(d.slot)} is paused until an admin raises the cap or stops the issue`;
    case 'schedule.disabled':
      return `Schedule ${str(d.schedule)} disabled itself${where}${d.reason ? `: ${str(d.reason)}` : ''}`;
    default:
      return `${n.kind}${where}`;
  }
}
