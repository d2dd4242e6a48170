// One exit-status scheme for every `modrule` subcommand, so a CI job, a pre-commit hook or Helm reads them alike
// (README, "Exit status"). It is `terraform plan -detailed-exitcode`'s: 0 nothing to report, 1 error, 2 the
// command ran and found something. 2 for a finding, not 1, because 1 is what a crash gives (Node exits 1 on an
// uncaught exception, npx when a package is missing): a broken job must never read as "the rules said no". It is
// also what `modrule apply` has always returned for a rejection, which scripts (and KubeMod's suite runner)
// test for.
//
// A new subcommand (audit, export, scope, ...) returns EXIT.ok or EXIT.finding, and throws UsageError for bad
// usage or input: main.ts turns that (and any unexpected error) into EXIT.error. Its --help ends with
// exitHelp('what a finding is for this command').

/** The exit statuses of every subcommand. */
export const EXIT = {
  /** Nothing to report: all admitted, all cases pass, no problems; a server stopped by SIGTERM or SIGINT. */
  ok: 0,
  /**
   * The command could not do its job: bad usage, input it cannot read, parse or load, a server that cannot
   * start, an unexpected failure. The message on stderr says which.
   */
  error: 1,
  /** The command did its job and found something: an object rejected, a case failed, a rule with a problem. */
  finding: 2,
} as const;

/** One of EXIT's values. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * The "Exit status" lines of a subcommand's --help: `finding` says what exit 2 means for it (none: never 2),
 * `error` what else makes it exit 1.
 */
export function exitHelp(finding?: string, error?: string): string {
  const lines = [
    `${EXIT.ok} success`,
    `${EXIT.error} bad usage or input${error ? `, ${error}` : ''} (the message says which file and field)`,
    ...(finding ? [`${EXIT.finding} ${finding}`] : []),
  ];
  return `Exit status: ${lines.join('\n             ')}\n`;
}
