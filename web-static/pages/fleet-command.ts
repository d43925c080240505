// A runner command on one project, sent through the project's command route (POST
// /api/projects/:projectId/commands): the Fleet page's buttons, its queue (fleet-queue.ts) and its
// Approve panel (fleet-pr.ts) all send theirs through this one helper. The server checks the role the
// command needs on that project and answers 502 with the runner's error, 409/503 when it has no runner.
import { api } from '../api.ts';
import type { CommandAnswer } from '../../protocol/api/runners.ts';

export const projectCommand = (projectId: string, name: string, args: Record<string, unknown> = {}) =>
  api<CommandAnswer>(`/api/projects/${projectId}/commands`, { method: 'POST', body: { name, args } });
