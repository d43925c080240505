// The fake GitLab's answers (test/fakes/gitlab.ts), each typed against @gitbeaker/core's schema for that
// endpoint (devDependency, exact version; docs/testing.md): `satisfies Pick<Schema, …>` makes tsc check
// every field the fake sends — its name and its type — against GitLab's documented shape.
import type { IssueNoteSchema, IssueSchema, JobSchema, MergeRequestLevelMergeRequestApprovalSchema, MergeRequestSchema, PipelineSchema, ProjectSchema } from '@gitbeaker/core';

export interface FakeGlIssue {
  id: number;
  iid: number;
  title: string;
  description: string;
  labels: string[];
  state: 'opened' | 'closed';
  at: string;
  /** Comments and GitLab's system notes ("changed the description", label changes…). */
  notes?: { id: number; body: string; username: string; system: boolean; at: string }[];
}
export interface FakeGlMr {
  id: number;
  iid: number;
  title: string;
  description: string;
  source: string;
  target: string;
  sha: string;
  state: 'opened' | 'closed' | 'merged';
  approvedBy: string[];
  requiredApprovals?: number;
  mergeCommit: string | null;
  diffs?: { old_path: string; new_path: string; new_file: boolean; renamed_file: boolean; deleted_file: boolean; diff: string; a_mode: string; b_mode: string; generated_file: boolean }[];
  at: string;
}
export interface FakeGlJob {
  id: number;
  name: string;
  status: string;
  retried: boolean;
  allowFailure?: boolean;
}
export interface FakeGlPipeline {
  id: number;
  iid: number;
  projectId: number;
  sha: string;
  ref: string;
  jobs: FakeGlJob[];
  at: string;
}
export interface FakeGlProject {
  id: number;
  path: string;
  defaultBranch: string;
  issues: FakeGlIssue[];
  mrs: FakeGlMr[];
  pipelines: FakeGlPipeline[];
  next: { issue: number; mr: number };
}

const author = { id: 7, name: 'Ada', username: 'ada', state: 'active', avatar_url: '', web_url: 'https://gitlab.example.com/ada' };

export const projectJson = (p: FakeGlProject, base: string) =>
  ({
    id: p.id,
    name: p.path.split('/').pop()!,
    path: p.path.split('/').pop()!,
    path_with_namespace: p.path,
    name_with_namespace: p.path.split('/').join(' / '),
    default_branch: p.defaultBranch,
    web_url: `${base}/${p.path}`,
    http_url_to_repo: `${base}/${p.path}.git`,
    ssh_url_to_repo: `git@x:${p.path}.git`,
    description: '',
    created_at: '2026-01-01T00:00:00Z',
  }) satisfies Pick<ProjectSchema, 'id' | 'name' | 'path' | 'path_with_namespace' | 'name_with_namespace' | 'default_branch' | 'web_url' | 'http_url_to_repo' | 'ssh_url_to_repo' | 'description' | 'created_at'>;

export const issueJson = (p: FakeGlProject, i: FakeGlIssue, base: string) =>
  ({
    id: i.id,
    iid: i.iid,
    project_id: p.id,
    title: i.title,
    description: i.description,
    state: i.state,
    labels: i.labels,
    author,
    type: 'ISSUE',
    created_at: i.at,
    updated_at: i.at,
    web_url: `${base}/${p.path}/-/issues/${i.iid}`,
    upvotes: 0,
    downvotes: 0,
    merge_requests_count: 0,
    user_notes_count: 0,
    confidential: false,
    references: { short: `#${i.iid}`, relative: `#${i.iid}`, full: `${p.path}#${i.iid}` },
  }) satisfies Pick<IssueSchema, 'id' | 'iid' | 'project_id' | 'title' | 'description' | 'state' | 'labels' | 'author' | 'type' | 'created_at' | 'updated_at' | 'web_url' | 'upvotes' | 'downvotes' | 'merge_requests_count' | 'user_notes_count' | 'confidential' | 'references'>;

export const noteJson = (p: FakeGlProject, i: FakeGlIssue, n: NonNullable<FakeGlIssue['notes']>[number]) =>
  ({
    id: n.id,
    body: n.body,
    attachment: null,
    author: { ...author, id: n.username === author.username ? author.id : 8, username: n.username, name: n.username },
    created_at: n.at,
    updated_at: n.at,
    system: n.system,
    noteable_id: i.id,
    noteable_type: 'Issue',
    noteable_iid: i.iid,
    project_id: p.id,
    resolvable: false,
  }) satisfies Pick<IssueNoteSchema, 'id' | 'body' | 'attachment' | 'author' | 'created_at' | 'updated_at' | 'system' | 'noteable_id' | 'noteable_type' | 'noteable_iid' | 'project_id' | 'resolvable'>;

export const mrJson = (p: FakeGlProject, m: FakeGlMr, base: string) =>
  ({
    id: m.id,
    iid: m.iid,
    project_id: p.id,
    title: m.title,
    description: m.description,
    state: m.state,
    created_at: m.at,
    updated_at: m.at,
    web_url: `${base}/${p.path}/-/merge_requests/${m.iid}`,
    source_branch: m.source,
    target_branch: m.target,
    source_project_id: p.id,
    target_project_id: p.id,
    author,
    draft: false,
    work_in_progress: false,
    sha: m.sha,
    merge_commit_sha: m.mergeCommit,
    merged_at: m.state === 'merged' ? m.at : null,
    merge_status: m.state === 'opened' ? 'can_be_merged' : 'cannot_be_merged',
    detailed_merge_status: m.state !== 'opened' ? 'not_open' : m.requiredApprovals && m.approvedBy.length < m.requiredApprovals ? 'not_approved' : 'mergeable',
    has_conflicts: false,
    labels: [],
    reference: `!${m.iid}`,
  }) satisfies Pick<
    MergeRequestSchema,
    | 'id' | 'iid' | 'project_id' | 'title' | 'description' | 'state' | 'created_at' | 'updated_at' | 'web_url' | 'source_branch' | 'target_branch' | 'source_project_id' | 'target_project_id'
    | 'author' | 'draft' | 'work_in_progress' | 'sha' | 'merge_commit_sha' | 'merged_at' | 'merge_status' | 'detailed_merge_status' | 'has_conflicts' | 'labels' | 'reference'
  >;

export const pipelineJson = (pl: FakeGlPipeline, base: string, path: string) =>
  ({
    id: pl.id,
    iid: pl.iid,
    project_id: pl.projectId,
    sha: pl.sha,
    ref: pl.ref,
    status: pipelineStatus(pl),
    source: 'merge_request_event',
    created_at: pl.at,
    updated_at: pl.at,
    web_url: `${base}/${path}/-/pipelines/${pl.id}`,
  }) satisfies PipelineSchema;

function pipelineStatus(pl: FakeGlPipeline): string {
  const latest = pl.jobs.filter((j) => !j.retried).map((j) => j.status);
  if (latest.some((s) => s === 'failed')) return 'failed';
  if (latest.some((s) => s !== 'success' && s !== 'skipped')) return 'running';
  return 'success';
}

export const jobJson = (pl: FakeGlPipeline, j: FakeGlJob, base: string, path: string) =>
  ({
    id: j.id,
    name: j.name,
    stage: 'test',
    status: j.status,
    ref: pl.ref,
    tag: false,
    allow_failure: j.allowFailure ?? false,
    created_at: pl.at,
    web_url: `${base}/${path}/-/jobs/${j.id}`,
    pipeline: pipelineJson(pl, base, path),
    queued_duration: 0.1,
  }) satisfies Pick<JobSchema, 'id' | 'name' | 'stage' | 'status' | 'ref' | 'tag' | 'allow_failure' | 'created_at' | 'web_url' | 'pipeline' | 'queued_duration'>;

export const approvalsJson = (p: FakeGlProject, m: FakeGlMr) =>
  ({
    id: m.id,
    iid: m.iid,
    project_id: p.id,
    title: m.title,
    description: m.description,
    state: m.state,
    created_at: m.at,
    updated_at: m.at,
    merge_status: m.state === 'opened' ? 'can_be_merged' : 'cannot_be_merged',
    approved: !m.requiredApprovals || m.approvedBy.length >= m.requiredApprovals,
    approvals_required: m.requiredApprovals ?? 0,
    approvals_left: Math.max(0, (m.requiredApprovals ?? 0) - m.approvedBy.length),
    approved_by: m.approvedBy.map((username, i) => ({ user: { ...author, id: 100 + i, username, name: username } })),
  }) satisfies Pick<MergeRequestLevelMergeRequestApprovalSchema, 'id' | 'iid' | 'project_id' | 'title' | 'description' | 'state' | 'created_at' | 'updated_at' | 'merge_status' | 'approved' | 'approvals_required' | 'approvals_left' | 'approved_by'>;
