// Versions shared by the server and the runner (spec: Versioning).
// The package version is injected by esbuild at build time; tsx runs fall back to package.json's.
declare const __SVC_VERSION__: string | undefined;

export const VERSION: string = typeof __SVC_VERSION__ === 'string' ? __SVC_VERSION__ : '0.0.0-dev';

declare const __SVC_BUILD__: string | undefined;
/** The commit the build was made from: 12 hex digits, or `unknown` (esbuild.config.mjs buildCommit; tsx runs). */
export const BUILD: string = typeof __SVC_BUILD__ === 'string' ? __SVC_BUILD__ : 'unknown';

/** Version and build as X-Svc-Version sends them, `0.1.0+0123456789ab` (semver build metadata; `0.1.0+unknown`). */
export const BUILD_VERSION = `${VERSION}+${BUILD}`;

/** Runner ↔ API protocol version; a mismatch closes the connection with 4400. */
export const PROTOCOL_VERSION = 1;

/**
 * Legacy names with the former product prefix (environment variables, trigger and webhook headers)
 * are accepted or sent until this runner version (spec: Versioning).
 */
export const LEGACY_UNTIL = '0.16.0';

/** Compare dotted versions numerically: -1, 0 or 1. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.+-]/).map((x) => Number.parseInt(x, 10) || 0);
  const pb = b.split(/[.+-]/).map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) < (pb[i] ?? 0) ? -1 : 1;
  return 0;
}

/** Whether this version still accepts and sends the legacy names. */
export const legacyNamesLive = (version = VERSION) => compareVersions(version, LEGACY_UNTIL) < 0;
