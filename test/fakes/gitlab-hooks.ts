// GitLab webhook bodies for the tests (issue 42), shaped as GitLab's documented examples of Issue, Note,
// Merge Request and Pipeline events ("Webhook events" in GitLab's docs) and typed against
// @gitbeaker/core's webhook schemas: `satisfies` makes tsc check the name and type of every field sent
// against GitLab's documented shape. Times are written as GitLab writes them in each event (ISO 8601 in
// issue and merge request events, `2026-11-29 10:00:00 UTC` in pipeline events).
import type { WebhookIssueEventSchema, WebhookIssueNoteEventSchema, WebhookMergeRequestEventSchema, WebhookPipelineEventSchema } from '@gitbeaker/core';
import type { FakeGlIssue, FakeGlMr, FakeGlProject } from './gitlab-shapes.ts';

type Attrs<S extends { object_attributes: unknown }, K extends keyof S['object_attributes']> = Pick<S['object_attributes'], K>;

const project = (p: FakeGlProject, base: string) => ({ id: p.id, name: p.path.split('/').pop()!, path_with_namespace: p.path, web_url: `${base}/${p.path}`, default_branch: p.defaultBranch });
const user = { id: 7, name: 'Ada', username: 'ada', avatar_url: '' };
const labelsOf = (p: FakeGlProject, names: string[]) =>
  names.map((title, i) => ({ id: i + 1, title, color: '#428BCA', project_id: p.id, created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z', template: false, description: '', type: 'ProjectLabel', group_id: 0 }));

/** An Issue Hook (`action`: open, update, close, reopen). */
export const issueHook = (p: FakeGlProject, i: FakeGlIssue, base: string, action: string, updatedAt: string) => ({
  object_kind: 'issue' as const,
  event_type: 'issue' as const,
  user,
  project: project(p, base),
  object_attributes: {
    id: i.id,
    iid: i.iid,
    title: i.title,
    description: i.description,
    state: i.state,
    action,
    url: `${base}/${p.path}/-/issues/${i.iid}`,
    created_at: i.at,
    updated_at: updatedAt,
    labels: labelsOf(p, i.labels),
  } satisfies Attrs<WebhookIssueEventSchema, 'id' | 'iid' | 'title' | 'description' | 'state' | 'action' | 'url' | 'created_at' | 'updated_at' | 'labels'>,
  labels: labelsOf(p, i.labels) satisfies WebhookIssueEventSchema['labels'],
});

/** A Note Hook on an issue: the comment and the issue as it is now. */
export const issueNoteHook = (p: FakeGlProject, i: FakeGlIssue, base: string, note: string, updatedAt: string) => ({
  object_kind: 'note' as const,
  event_type: 'note' as const,
  user,
  project_id: p.id,
  project: project(p, base),
  object_attributes: { id: 900 + i.iid, note, noteable_type: 'Issue', system: false, created_at: updatedAt, updated_at: updatedAt, url: `${base}/${p.path}/-/issues/${i.iid}#note_${900 + i.iid}` } satisfies Attrs<WebhookIssueNoteEventSchema, 'id' | 'note' | 'noteable_type' | 'system' | 'created_at' | 'updated_at' | 'url'>,
  issue: {
    id: i.id,
    iid: i.iid,
    title: i.title,
    description: i.description,
    state: i.state,
    created_at: i.at,
    updated_at: updatedAt,
    labels: labelsOf(p, i.labels),
  } satisfies Pick<WebhookIssueNoteEventSchema['issue'], 'id' | 'iid' | 'title' | 'description' | 'state' | 'created_at' | 'updated_at' | 'labels'>,
});

/** A Merge Request Hook (`action`: open, update, reopen, close, merge, approved, …). */
export const mrHook = (p: FakeGlProject, m: FakeGlMr, base: string, action: string, updatedAt: string) => ({
  object_kind: 'merge_request' as const,
  event_type: 'merge_request' as const,
  user,
  project: project(p, base),
  object_attributes: {
    id: m.id,
    iid: m.iid,
    title: m.title,
    description: m.description,
    state: m.state,
    action,
    source_branch: m.source,
    target_branch: m.target,
    url: `${base}/${p.path}/-/merge_requests/${m.iid}`,
    created_at: m.at,
    updated_at: updatedAt,
    draft: false,
    detailed_merge_status: 'mergeable',
    last_commit: { id: m.sha, message: m.title, title: m.title, timestamp: updatedAt, url: `${base}/${p.path}/-/commit/${m.sha}`, author: { name: 'Ada', email: 'ada@example.com' } },
  } satisfies Attrs<WebhookMergeRequestEventSchema, 'id' | 'iid' | 'title' | 'description' | 'state' | 'action' | 'source_branch' | 'target_branch' | 'url' | 'created_at' | 'updated_at' | 'draft' | 'detailed_merge_status' | 'last_commit'>,
});

/** A Pipeline Hook for a commit, its jobs as `builds` (a retried job appears with each attempt). */
export const pipelineHook = (p: FakeGlProject, base: string, pl: { id: number; sha: string; status: string; mr?: FakeGlMr; builds: { id: number; name: string; status: string; allowFailure?: boolean }[] }, finishedAt: string) => ({
  object_kind: 'pipeline' as const,
  user,
  project: project(p, base),
  object_attributes: {
    id: pl.id,
    iid: pl.id,
    ref: pl.mr?.source ?? p.defaultBranch,
    sha: pl.sha,
    status: pl.status,
    created_at: finishedAt,
    finished_at: finishedAt,
    url: `${base}/${p.path}/-/pipelines/${pl.id}`,
  } satisfies Attrs<WebhookPipelineEventSchema, 'id' | 'iid' | 'ref' | 'sha' | 'status' | 'created_at' | 'finished_at' | 'url'>,
  merge_request: (pl.mr ? { id: pl.mr.id, iid: pl.mr.iid, title: pl.mr.title, source_branch: pl.mr.source, target_branch: pl.mr.target, state: pl.mr.state, url: `${base}/${p.path}/-/merge_requests/${pl.mr.iid}` } : null) satisfies Pick<NonNullable<WebhookPipelineEventSchema['merge_request']>, 'id' | 'iid' | 'title' | 'source_branch' | 'target_branch' | 'state' | 'url'> | null,
  builds: pl.builds.map((b) => ({ id: b.id, stage: 'test', name: b.name, status: b.status, allow_failure: b.allowFailure ?? false, created_at: finishedAt, started_at: finishedAt, finished_at: finishedAt, when: 'on_success', manual: false }) satisfies Pick<NonNullable<WebhookPipelineEventSchema['builds']>[number], 'id' | 'stage' | 'name' | 'status' | 'allow_failure' | 'created_at' | 'started_at' | 'finished_at' | 'when' | 'manual'>),
});
