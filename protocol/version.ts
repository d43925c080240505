// Versions shared by the server and the runner (spec: Versioning).
// The package version is injected by esbuild at build time; tsx runs fall back to package.json's.
declare const __SVC_VERSION__: string | undefined;

export const VERSION: string = typeof __SVC_VERSION__ === 'string' ? __SVC_VERSION__ : '0.0.0-dev';

/** Runner ↔ API protocol version; a mismatch closes the connection with 4400. */
export const PROTOCOL_VERSION = 1;
