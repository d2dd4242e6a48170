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
