// The code-host adapter (issue 42): what the runner's code-host commands (issues.refresh, issue.create,
// pr.inspect, pr.approve, collector.poll), its collectors and a skill run's pull request need from a
// host, in host-neutral terms. GitHub (github-adapter.ts) and GitLab (gitlab.ts) implement it; a
// project's watch-list entry says which one it uses (`host` for GitLab, else `repo` on GitHub).
// "Pull request" here is GitLab's merge request; its number is the MR's iid; checks are the head
// pipeline's jobs.
import type { Check, CheckState } from '../../protocol/checks.ts';
import type { OpenPull } from './changes.ts';
import type { GitHubClient } from './client.ts';

export interface QueueIssue {
  number: number;
  title: string;
  url: string;
  labels: string[];
}

/** A pull request seen by number: its state now (null: it does not exist). */
export interface PullState {
  number: number;
  title: string;
  url: string;
  state: 'open' | 'merged' | 'closed';
  branch: string;
  base: string;
  sha: string;
  draft: boolean;
  mergeable: boolean | null;
  mergeableState: string | null;
}

export interface Inspection extends PullState {
  files: { path: string; status: string; additions: number; deletions: number }[];
  filesComplete: boolean;
  additions: number;
  deletions: number;
  checks: Check[];
  reviews: { user: string | null; state: string; submittedAt: string | null }[];
}

/** One issue as a worker reads it (`svc-runner issue-view`): its text and its comments, oldest first
 *  (GitLab's system notes left out). */
export interface IssueView {
  number: number;
  title: string;
  url: string;
  state: 'open' | 'closed';
  body: string;
  labels: string[];
  author: string | null;
  comments: { author: string | null; body: string; createdAt: string | null }[];
  /** false: more comments than one read takes (1,000). */
  commentsComplete: boolean;
}

export interface CallOptions {
  urgent?: boolean;
  /** This token instead of the client's (a skill run's profile, a command's server token). */
  token?: string;
}

export interface HostAdapter {
  readonly kind: 'github' | 'gitlab';
  /** The REST client (one rate-limit and backoff state per host). */
  readonly client: GitHubClient;
  /** Where git pushes over https may carry the token, and the user name it goes with. */
  readonly git: { host: string; user: string };
  openIssues(repo: string, o?: CallOptions): Promise<{ items: QueueIssue[]; complete: boolean }>;
  /** Open pull requests with their head commits' checks. */
  openPulls(repo: string, o?: CallOptions): Promise<{ items: OpenPull[]; complete: boolean }>;
  pull(repo: string, n: number, o?: CallOptions): Promise<PullState | null>;
  /** One issue with its comments (null: it does not exist). */
  issue(repo: string, n: number, o?: CallOptions): Promise<IssueView | null>;
  inspect(repo: string, n: number, o?: CallOptions): Promise<Inspection | null>;
  createIssue(repo: string, body: { title: string; body: string; labels?: string[] }, o?: CallOptions): Promise<{ number: number; url: string }>;
  defaultBranch(repo: string, o?: CallOptions): Promise<string>;
  /** An open pull request from `branch`, if one exists already. */
  pullFromBranch(repo: string, branch: string, o?: CallOptions): Promise<{ number: number; url: string } | null>;
  createPull(repo: string, body: { title: string; body: string; head: string; base: string }, o?: CallOptions): Promise<{ number: number; url: string }>;
  /** Approve on the host (GitLab's approvals; GitHub's decisions stay in the signal file): null when the host has no such step. */
  approve?(repo: string, n: number, o?: CallOptions): Promise<{ approved: boolean }>;
  /** Merge through the host's API (its approval rules and branch protection apply); the refusal is the error. */
  merge?(repo: string, n: number, o?: CallOptions): Promise<{ merged: boolean; sha: string | null; branchDeleted?: boolean }>;
  /** Set the cost block in the pull request's description (protocol/cost-block.ts): read, rewrite only the
   *  block, write back when it changed. null: the pull request does not exist. */
  describe(repo: string, n: number, block: string, o?: CallOptions): Promise<{ changed: boolean } | null>;
}

export type { Check, CheckState };
