// Who is signed in (GET /api/me), handed to every page by app.ts: pages decide from it which buttons
// to show (a viewer sees no button it cannot use; the API checks every request again).
import type { MeAnswer } from '../protocol/api/auth.ts';

export type Role = MeAnswer['projects'][number]['role'];
export type Me = MeAnswer;

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** Whether the signed-in user has at least `min` on the project (instance admins have admin everywhere). */
export function can(me: Me, projectId: string, min: Role): boolean {
  if (me.user.instanceAdmin) return true;
  const role = me.projects.find((p) => p.id === projectId)?.role;
  return role !== undefined && RANK[role] >= RANK[min];
}
