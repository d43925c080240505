// Instance settings and instance secrets (admin only, audited).
import * as z from 'zod';
import { encryptionKeyStatus, secretList, secretStatus, settingsAnswer } from '../../protocol/api/settings.ts';
import { audited } from '../audit/audit.ts';
import { auditedDelete } from '../lib/admin-routes.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { json } from '../lib/errors.ts';
import { BACKUP_NOTE } from '../lib/keyfile.ts';
import { requireEncryptionKey } from '../lib/crypto.ts';
import { listSettings, saveSetting } from './queries.ts';
import { INSTANCE_SECRETS, deleteSecret, secretStatuses, storeSecret } from './secrets.ts';
import type { SecretName } from './secrets.ts';

/** Every editable setting with its schema; unknown keys are refused by name. */
export const settingsPatch = z.strictObject({
  'instance.name': z.string().trim().min(1).max(100).optional(),
});

const secretName = z.strictObject({
  name: z.enum(Object.keys(INSTANCE_SECRETS) as [SecretName, ...SecretName[]], { message: `must be one of ${Object.keys(INSTANCE_SECRETS).join(', ')}` }),
});

export const routes: Route[] = [
  route({ method: 'GET', path: '/api/settings', tag: 'settings', access: 'instanceAdmin',
    summary: 'Instance settings',
    responses: { 200: { description: 'the settings', schema: settingsAnswer } },
    async handler(_input, ctx) {
      return json({ settings: await listSettings(ctx.db) });
    },
  }),
  route({ method: 'PATCH', path: '/api/settings', tag: 'settings', access: 'instanceAdmin',
    summary: 'Change instance settings',
    body: settingsPatch,
    responses: { 200: { description: 'the settings as saved', schema: settingsAnswer } },
    async handler({ principal, body, requestId }, ctx) {
      const changes = Object.entries(body).filter(([, v]) => v !== undefined);
      await audited(ctx.db, { actor: principal!, action: 'settings.update', target: { type: 'settings' }, diff: { after: Object.fromEntries(changes) }, requestId }, async (tx) => {
        for (const [key, value] of changes) await saveSetting(tx, key, value);
      });
      return json({ settings: await listSettings(ctx.db) });
    },
  }),
  route({ method: 'GET', path: '/api/settings/encryption-key', tag: 'settings', access: 'instanceAdmin',
    summary: 'The encryption key of stored secrets: set or not, where it comes from (environment or generated file), its fingerprint — never the key',
    responses: { 200: { description: 'the key status', schema: encryptionKeyStatus } },
    handler: (_input, ctx) => {
      const { source, path, fingerprint } = ctx.keys.origin;
      return json({ set: ctx.keys.encryption !== null, source, path, fingerprint, backup: source === 'none' ? null : source === 'file' ? BACKUP_NOTE : 'keep a copy of APP_ENCRYPTION_KEY apart from the database backups' });
    },
  }),
  route({ method: 'GET', path: '/api/secrets', tag: 'settings', access: 'instanceAdmin',
    summary: 'Instance secrets: configured or not, and whether they decrypt with the current APP_ENCRYPTION_KEY (never the value)',
    responses: { 200: { description: 'the instance secrets', schema: secretList } },
    async handler(_input, ctx) {
      return json({ encryptionKeySet: ctx.keys.encryption !== null, secrets: await secretStatuses(ctx.db, ctx.keys.encryption) });
    },
  }),
  route({ method: 'PUT', path: '/api/secrets/:name', tag: 'settings', access: 'instanceAdmin', params: secretName,
    summary: 'Store an instance secret, encrypted; 409 encryption_key_missing without APP_ENCRYPTION_KEY',
    body: z.strictObject({ value: z.string().min(1).max(16 * 1024) }),
    responses: { 200: { description: "the secret's status", schema: secretStatus } },
    async handler({ principal, params, body, requestId }, ctx) {
      const key = requireEncryptionKey(ctx);
      await audited(ctx.db, { actor: principal!, action: 'secret.set', target: { type: 'instance_secret', id: params.name }, requestId }, (tx) =>
        storeSecret(tx, key, params.name, body.value, principal!.user.id),
      );
      const status = (await secretStatuses(ctx.db, key)).find((s) => s.name === params.name);
      return json(status);
    },
  }),
  auditedDelete({
    path: '/api/secrets/:name',
    summary: 'Remove an instance secret',
    tag: 'settings',
    params: secretName,
    id: 'name',
    action: 'secret.delete',
    targetType: 'instance_secret',
    missing: 'that secret is not set',
    remove: deleteSecret,
  }),
];
