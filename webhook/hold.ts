/** The webhook timeout the API server assumes when the call carries none (admissionregistration/v1 default). */
const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
/** Answer this much before the API server gives up, so our answer (not its timeout) decides. */
const ANSWER_MARGIN_MS = 1000;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration such as "10s", "1m30s" or "500ms" in milliseconds, or null when it is not one. */
export function parseGoDuration(text: string): number | null {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return null;
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]], 0);
}

/**
 * How long a webhook request may be held before it must be answered: the API server sends the webhook's
 * timeoutSeconds as `?timeout=10s` on every call; we keep a second in hand.
 */
export function holdBudgetMs(url: string | undefined): number {
  const query = (url ?? '').split('?')[1] ?? '';
  const timeout = new URLSearchParams(query).get('timeout');
  const ms = timeout ? parseGoDuration(timeout) : null;
  return Math.max(0, (ms ?? DEFAULT_WEBHOOK_TIMEOUT_MS) - ANSWER_MARGIN_MS);
}

/** Resolves true when `ready` settles within ms, false otherwise. */
export function within(ready: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    ready.then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(false);
      },
    );
  });
}
