// Answer of GET /api/projects/:projectId/pulls/:number/record (issue #40 part 3; docs/orchestrator.md,
// "A record per pull request"): one pull request's record — its issue, the agent sessions and skill runs
// that made it with their cost and tokens, each approval and the merge with the checks at that moment,
// and each step's audit record with its place in the hash chain. Sent by functions/codehost/record.ts;
// the Fleet page (web-static/pages/fleet-record.ts) shows it and offers it as a JSON download.
import * as z from 'zod';
import { auditRecordAnswer } from './audit.ts';
import { iso, maybe } from './common.ts';
import { totalsAnswer } from './cost.ts';
import { RUNTIMES } from '../runtimes.ts';

/** The checks as the server knew them (null state: it had not seen the pull request then). */
export const checksAt = z.object({
  state: z.enum(['none', 'pending', 'passed', 'failed']).nullable(),
  summary: maybe,
  sha: maybe,
  at: iso.nullable(),
});

/** An approval or the merge: who and how, when, the checks then, and its audit record (seq, prevHash, hash). */
export const pullStep = z.object({
  step: z.enum(['approved', 'merged']),
  /** An approval: page (the admin pages), link (an action link), api (an API token). A merge: runner (its poll) or app (a GitHub App delivery). */
  via: z.string(),
  at: iso,
  userId: maybe,
  userName: maybe,
  actorLabel: z.string(),
  headSha: maybe,
  checks: checksAt,
  /** The audit record as GET /api/audit shows it: recompute `hash` from `prevHash` and the record (docs/audit.md), and find it in the chain at `seq`. */
  audit: auditRecordAnswer,
});
export type PullStep = z.output<typeof pullStep>;

export const recordSession = totalsAnswer.extend({
  id: z.string(),
  runtime: z.enum(RUNTIMES),
  sessionId: z.string(),
  slot: maybe,
  issue: maybe,
  runId: maybe,
  branch: maybe,
  models: z.array(z.string()),
  firstAt: iso,
  lastAt: iso,
});

export const recordRun = totalsAnswer.extend({
  id: z.string(),
  skill: z.string(),
  state: z.string(),
  branch: maybe,
  createdAt: iso,
  finishedAt: iso.nullable(),
  /** What the runtime itself reported the run cost (null: nothing reported). */
  runtimeCostUsd: z.number().nullable(),
});

export const pullRecord = z.object({
  projectId: z.string(),
  number: z.number().int(),
  title: maybe,
  url: maybe,
  branch: maybe,
  state: z.enum(['open', 'merged', 'closed']),
  checks: checksAt,
  /** The issue it resolves (from its slot branch svc/<slot>/issue-<n>, else its sessions); title and url when the queue knows it. */
  issue: z.object({ number: z.number().int(), title: maybe, url: maybe }).nullable(),
  sessions: z.array(recordSession),
  runs: z.array(recordRun),
  /** Every LLM request of the sessions and runs above, summed once. */
  totals: totalsAnswer,
  approvals: z.array(pullStep),
  merge: pullStep.nullable(),
  /** The audit chain's head when the record was read: a verifier walking the log up to it covers every step. */
  auditHead: z.object({ seq: z.number().int(), hash: z.string() }).nullable(),
  generatedAt: iso,
});
export type PullRecord = z.output<typeof pullRecord>;
