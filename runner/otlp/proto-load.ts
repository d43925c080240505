// Loads runner/otlp/proto.ts: from the gzipped CommonJS build embedded in the runner bundle
// (`__SVC_OTLP_PROTO__`, esbuild.config.mjs), or as a module when the runner runs from source.
import { gunzipSync } from 'node:zlib';
import type * as Proto from './proto.ts';

declare const __SVC_OTLP_PROTO__: string | undefined;

export type { Proto };

export async function loadProto(): Promise<typeof Proto> {
  if (typeof __SVC_OTLP_PROTO__ !== 'string') return import('./proto.ts');
  const module = { exports: {} as typeof Proto };
  // eslint-disable-next-line no-new-func -- the runner's own code, built with it (not input from anywhere)
  new Function('module', 'exports', 'require', gunzipSync(Buffer.from(__SVC_OTLP_PROTO__, 'base64')).toString('utf8'))(module, module.exports, require);
  return module.exports;
}
