// The rules of the delivery and circuit state tables (spec: States → Outbound webhook circuit,
// Outbound delivery; Limits). Pure functions of the current state, the outcome and the time, so the
// tests drive them with an injected clock instead of waiting.

export const MAX_ATTEMPTS = 8;
export const FIRST_RETRY_MS = 30_000;
export const JITTER = 0.2;
export const CIRCUIT_THRESHOLD = 10;
export const CIRCUIT_PAUSE_MS = 15 * 60_000;

/** Wait before the attempt after attempt `n` (1-based) failed: 30 s doubling, ±20 % (random in [0, 1)). */
export function retryDelay(n: number, random: () => number = Math.random): number {
  const base = FIRST_RETRY_MS * 2 ** (n - 1);
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/**
 * Where a delivery goes after an attempt (spec: Outbound delivery table). The retry schedule counts
 * within the delivery's attempt series: a recovered delivery (recover.ts) has a new series of
 * MAX_ATTEMPTS after the ones it used, and its first retry waits 30 s again, not 2 hours.
 */
export function afterAttempt(
  attempt: number,
  allowed: number,
  ok: boolean,
  now: number,
  random: () => number = Math.random,
): { status: DeliveryStatus; nextAttemptAt: number | null } {
  if (ok) return { status: 'delivered', nextAttemptAt: null };
  if (attempt >= allowed) return { status: 'failed', nextAttemptAt: null };
  return { status: 'pending', nextAttemptAt: now + retryDelay(Math.max(1, attempt - Math.max(0, allowed - MAX_ATTEMPTS)), random) };
}

export type CircuitState = 'closed' | 'open' | 'half-open';

export interface Circuit {
  state: CircuitState;
  consecutiveFailures: number;
  openedAt: number | null;
  trialDeliveryId: string | null;
}

/** What the admin page says for each state (spec: circuit table, Other effects). */
export const CIRCUIT_LABEL: Record<CircuitState, string> = {
  closed: 'Delivering',
  open: 'Delivery paused (receiver failing)',
  'half-open': 'Trying the receiver again',
};

/**
 * The circuit after one finished attempt of one of its deliveries.
 * - closed: a success resets the count; the 10th consecutive failure opens it.
 * - half-open: only the trial delivery moves it — success closes, failure opens again for 15 minutes.
 * - open: attempts that were already in flight when it opened change nothing.
 */
export function circuitAfterAttempt(c: Circuit, deliveryId: string, ok: boolean, now: number): Circuit {
  if (c.state === 'half-open') {
    if (c.trialDeliveryId !== deliveryId) return c;
    return ok
      ? { state: 'closed', consecutiveFailures: 0, openedAt: null, trialDeliveryId: null }
      : { state: 'open', consecutiveFailures: c.consecutiveFailures + 1, openedAt: now, trialDeliveryId: null };
  }
  if (c.state === 'open') return c;
  if (ok) return c.consecutiveFailures === 0 ? c : { ...c, consecutiveFailures: 0 };
  const failures = c.consecutiveFailures + 1;
  return failures >= CIRCUIT_THRESHOLD ? { state: 'open', consecutiveFailures: failures, openedAt: now, trialDeliveryId: null } : { ...c, consecutiveFailures: failures };
}

/** An open circuit may try one delivery again once the pause has passed (open → half-open). */
export const trialDue = (c: Pick<Circuit, 'state' | 'openedAt'>, now: number) => c.state === 'open' && c.openedAt !== null && now - c.openedAt >= CIRCUIT_PAUSE_MS;

/** Admin "Resume deliveries": closed by hand, whatever the state. */
export const resumed = (): Circuit => ({ state: 'closed', consecutiveFailures: 0, openedAt: null, trialDeliveryId: null });
