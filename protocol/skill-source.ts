// Where a skill comes from, as the `skill.*` commands (commands.ts) and runner.json's catalog sources
// name it; its own module so that reading runner.json does not build every command's schema.
import * as z from 'zod';

/**
 * Where a skill comes from (docs/skill-runs.md, Catalog): a git repository (https, ssh, scp-like
 * `git@host:path`, file:// or an absolute path), an optional ref, and the skill's directory in it.
 */
export const skillSource = z.strictObject({
  repo: z
    .string()
    .min(1)
    .max(2048)
    .refine((r) => !r.startsWith('-') && !/[\0\s]/.test(r) && /^(https:\/\/|ssh:\/\/|file:\/\/|\/|[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:)/.test(r), {
      message: 'must be an https://, ssh://, file:// or user@host: git URL, or an absolute path',
    }),
  ref: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/, { message: 'must be a branch, tag or commit' }).refine((r) => !r.includes('..'), { message: 'must not contain ..' }).optional(),
  path: z
    .string()
    .max(1024)
    .refine((p) => p === '' || p === '.' || (!p.startsWith('/') && !p.includes('\0') && !p.split('/').some((seg) => seg === '..' || seg === '')), { message: 'must be a relative path inside the repository without ..' })
    .default(''),
});
export type SkillSource = z.output<typeof skillSource>;
