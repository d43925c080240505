// Types of scripts/test-tools.mjs (plain JavaScript, so the test driver runs without tsx).
export declare const TOOLS: Record<string, string[]>;
export declare function needsOf(file: string, seen?: Map<string, Set<string>>): Set<string>;
export declare function available(tool: string): boolean;
export declare function whyNoInstall(env?: NodeJS.ProcessEnv): string | undefined;
export declare function ensureTools(tools: Iterable<string>, log?: (line: string) => void): Map<string, string>;
export declare function countTests(file: string): number;
