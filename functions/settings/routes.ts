// Instance settings and the encryption key's status (admin only, audited). There are no instance-wide
// secrets: each stored secret belongs to what uses it (a GitHub App's key and webhook secret, a chat
// channel's token, a webhook's or trigger's secret) and is entered there.
import * as z from 'zod';
import { encryptionKeyStatus, settingsAnswer } from '../../protocol/api/settings.ts';
import { audited } from '../audit/audit.ts';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import { json } from '../lib/errors.ts';
import { BACKUP_NOTE } from '../lib/keyfile.ts';
import { listSettings, saveSetting } from './queries.ts';

/** Every editable setting with its schema; unknown keys are refused by name. */
export const settingsPatch = z.strictObject({
  'instance.name': z.string().trim().min(1).max(100).optional(),
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
];
