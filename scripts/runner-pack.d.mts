// Types of runner-pack.mjs, for the tests that import it.
export const BODY_HEAD: string;
export const BODY_TAIL: string;
export const BODY_LINE_OFFSET: number;
export function escapeCommentEnd(code: string): string;
export function packFile(code: string, opts: { root: string; title: string }): Promise<string>;
export function shiftMap(map: string | object): object;
