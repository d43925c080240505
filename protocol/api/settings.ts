// Answers of the settings API (instance settings, the encryption key's status): the
// shapes functions/settings/routes.ts sends (declared in its `responses`, so CHECK_ANSWERS holds the
// handlers to them) and web-static/pages/settings.ts reads (type imports only, so zod stays out of the
// pages' bundle).
import * as z from 'zod';

/** GET and PATCH /api/settings: every instance setting with its value and what it is. */
export const settingsAnswer = z.object({ settings: z.array(z.object({ key: z.string(), value: z.unknown(), description: z.string() })) });
export type SettingsAnswer = z.output<typeof settingsAnswer>;

/** GET /api/settings/encryption-key: set or not, where it comes from, its fingerprint and what to back up — never the key. */
export const encryptionKeyStatus = z.object({ set: z.boolean(), source: z.enum(['environment', 'file', 'none']), path: z.string().nullable(), fingerprint: z.string().nullable(), backup: z.string().nullable() });
export type EncryptionKeyStatus = z.output<typeof encryptionKeyStatus>;

