// Types of scripts/lazy-schemas.mjs (plain JavaScript: esbuild.config.mjs imports it).
import type { Plugin } from 'esbuild';
export declare function lazySchemaSource(source: string, path: string, helper?: string): { code: string; wrapped: number };
export declare const lazySchemas: () => Plugin;
