/** Polls until check() returns something other than false (or stops throwing); fails after timeoutMs. */
export async function eventually(check: () => boolean | void, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  for (;;) {
    let error: unknown = null;
    try {
      if (check() !== false) return;
    } catch (err) {
      error = err;
    }
    if (Date.now() - start > timeoutMs) throw error ?? new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
