// Why a run could not start, in words (issue 34; docs/skill-runs.md "Runs that did not start"). Pure and
// shared: the server uses it for the dry run's message, activity and notification texts; the admin pages
// (Runs, Integrations → triggers, Activity) import it for the same sentences.

/** The reason codes a run that did not start is recorded with, and the dry run's would_fail reasons. */
export const START_REASONS = [
  'no_profile',
  'runner_offline',
  'budget_exceeded',
  'previous_still_running',
  'creator_not_authorized',
  'command_refused',
  'command_timeout',
  'interrupted',
] as const;
export type StartReason = (typeof START_REASONS)[number];

export const NO_RUNTIME_REMEDY =
  'On the runner machine: install Claude Code (`claude`) or the Codex CLI (`codex`) and sign in, run `svc-runner profiles --detect --write`, then restart the runner.';

const WORDS: Record<StartReason, string> = {
  no_profile: 'the runner has no agent runtime it can use (no configured profile whose CLI is installed and signed in)',
  runner_offline: "the project's runner is offline (or the project has no runner)",
  budget_exceeded: "the project's monthly budget is spent and set to stop",
  previous_still_running: 'a run of this trigger or schedule is still going',
  creator_not_authorized: 'its creator is no longer an active admin of the project',
  command_refused: 'the runner refused to start it',
  command_timeout: 'the runner did not answer in time',
  interrupted: 'the server process stopped while starting it',
};

/** One sentence (no final stop) for a reason code; an unknown code is shown as itself. */
export function startReasonWords(reason: string): string {
  return (WORDS as Record<string, string>)[reason] ?? reason.replace(/_/g, ' ');
}

/** What to do about it, when there is something to do. */
export function startReasonRemedy(reason: string): string | null {
  switch (reason) {
    case 'no_profile':
      return NO_RUNTIME_REMEDY;
    case 'runner_offline':
      return 'Start the runner on its machine (`svc-runner status`, then restart its service); the Runners page says how.';
    case 'budget_exceeded':
      return "Raise the project's budget or change its action, or wait for next month.";
    case 'creator_not_authorized':
      return 'An admin of the project re-creates it (it runs on behalf of its creator).';
    default:
      return null;
  }
}

/**
 * The reason a failed start is recorded with, from a trigger delivery's or schedule run's outcome: a
 * runner refusal that says it has no usable agent (its error codes `no_profile`, `agent_not_found`,
 * `unknown_profile`, at the start of the detail) is `no_profile`; the rest keep their own code.
 */
export function failedStartReason(reason: string, detail: string | null | undefined): string {
  if (reason === 'command_refused' && /^(no_profile|agent_not_found|unknown_profile):/.test(detail ?? '')) return 'no_profile';
  return reason;
}
