/** The message of anything thrown: an Error's message, else its string form. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  // An Error from another realm (a vm context, a worker) is not `instanceof Error` here but still has its message.
  if (typeof err === 'object' && err !== null && typeof (err as { message?: unknown }).message === 'string')
    return (err as { message: string }).message;
  if (typeof err === 'string') return err;
  try {
    return String(err);
  } catch {
    return 'unknown error';
  }
}

/** Anything thrown as an Error (its message kept), for APIs that take an Error. */
export function errorOf(err: unknown): Error {
  return err instanceof Error ? err : new Error(messageOf(err));
}

/** What to print of an unexpected failure: an Error's stack, else its message. */
export function stackOf(err: unknown): string {
  return err instanceof Error && err.stack ? err.stack : messageOf(err);
}
