// The code-host app admin API's statements (functions/codehost/routes.ts reads as validate → call →
// present). One app's row (appRow) is in apps.ts, which the hook shares.
import { sql } from '../lib/db/index.ts';
import type { Queryable } from '../lib/db/index.ts';
import type { AppRow, DeliveryRow } from './apps.ts';

export const listApps = (q: Queryable) => q.query<AppRow>(sql`select * from codehost_apps order by created_at, id`);

export async function insertApp(
  q: Queryable,
  a: { id: string; name: string; githubAppId: number | null; publicId: string; publicIdHash: string; webhookSecretCiphertext: string; privateKeyCiphertext: string | null; createdBy: string; apiUrl: string },
): Promise<void> {
  await q.query(sql`
    insert into codehost_apps (id, name, github_app_id, public_id, public_id_hash, webhook_secret_ciphertext, private_key_ciphertext, created_by, api_url)
    values (${a.id}, ${a.name}, ${a.githubAppId}, ${a.publicId}, ${a.publicIdHash}, ${a.webhookSecretCiphertext},
            ${a.privateKeyCiphertext}, ${a.createdBy}, ${a.apiUrl})`);
}

export async function updateApp(q: Queryable, id: string, s: { name: string; githubAppId: string | number | null; privateKeyCiphertext: string | null; apiUrl: string }): Promise<void> {
  await q.query(sql`
    update codehost_apps set name = ${s.name},
           github_app_id = ${s.githubAppId},
           private_key_ciphertext = ${s.privateKeyCiphertext}, api_url = ${s.apiUrl}, updated_at = now()
     where id = ${id}`);
}

export async function setWebhookSecret(q: Queryable, id: string, ciphertext: string): Promise<void> {
  await q.query(sql`update codehost_apps set webhook_secret_ciphertext = ${ciphertext}, updated_at = now() where id = ${id}`);
}

export async function deleteApp(q: Queryable, id: string): Promise<void> {
  await q.query(sql`delete from codehost_apps where id = ${id}`);
}

/** The app's deliveries of the last 14 days, newest first. */
export const listDeliveries = (q: Queryable, appId: string, limit: number) =>
  q.query<DeliveryRow>(sql`
    select * from codehost_deliveries where app_id = ${appId} and created_at >= now() - interval '14 days'
     order by created_at desc, id desc limit ${limit}`);

/** The runner of a project (null: none), for the queue's slots; undefined when there is no such project. */
export const projectRunner = async (q: Queryable, projectId: string): Promise<string | null | undefined> =>
  (await q.query<{ runner_id: string | null }>(sql`select runner_id from projects where id = ${projectId}`))[0]?.runner_id;
