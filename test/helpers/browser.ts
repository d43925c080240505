// Debian's chromium driven by playwright-core (no browser download), headless on loopback only.
// needs: chromium
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    // uvu swallows errors thrown in before hooks, where browsers are launched: say it here too.
    const message = `no browser at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`;
    console.error(message);
    // …and the server the same hook started is never stopped, so the file would hang: end it.
    process.exitCode = 1;
    setTimeout(() => process.exit(1), 2000).unref();
    throw new Error(message);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
