import { EXIT } from './exit';
import { Command, CommandIO, dropOutputWhenClosed, processIO, UsageError } from './io';
import { stackOf } from '../util/errors';

// Subcommands load lazily so `modrule select` does not pay for the HTTP server or the Kubernetes client.
// A new subcommand is one entry here; it parses with parseCommand (./args.ts), returns the statuses of ./exit.ts
// and throws UsageError for bad usage or input, which main() prints.
const commands: Record<string, { summary: string; load: () => Promise<Command> }> = {
  select: {
    summary: 'evaluate a JSONPath select against an object',
    load: async () => (await import('./select')).run,
  },
  apply: {
    summary: 'run ModRules offline: manifests in, patched manifests out',
    load: async () => (await import('./apply')).run,
  },
  'post-render': {
    summary: 'a Helm post-renderer: apply with Helm safeguards (Helm 4 plugin: helm-plugin/modrule)',
    load: async () => (await import('./post-render')).run,
  },
  test: {
    summary: 'run ModRule test suites (modrule-test.yaml): expected patches and rejections',
    load: async () => (await import('./test')).run,
  },
  audit: {
    summary: 'what the ModRules would do to objects in a cluster; --apply brings them in line',
    load: async () => (await import('./audit')).run,
  },
  explain: {
    summary: 'which ModRules would patch or reject a live object in a cluster now, and why',
    load: async () => (await import('./explain-live')).run,
  },
  export: {
    summary: 'compile ModRules to native admission policies (--native) for kubectl apply',
    load: async () => (await import('./export')).run,
  },
  validate: {
    summary: 'check ModRule files offline as the admission webhook does (pre-commit, CI)',
    load: async () => (await import('./validate')).run,
  },
  scope: {
    summary: 'show which requests the API server will send the dragnet for these ModRules',
    load: async () => (await import('./scope')).run,
  },
  serve: {
    summary: 'run the admission webhook (--local: rules from files, no cluster)',
    load: async () => (await import('./serve')).run,
  },
  webhooks: {
    summary: 'print the webhook configurations calling an operator out of the cluster by URL',
    load: async () => (await import('./webhooks')).run,
  },
  operator: { summary: 'run the operator in a cluster', load: async () => (await import('./operator')).run },
};

function usage(): string {
  // Every summary starts in one column, after the longest command name.
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return (
    `usage: modrule <command> [options]\n\ncommands:\n${lines.join('\n')}\n\n` +
    `Run "modrule <command> --help" for a command's options. Wherever a command takes a file, "-" is\n` +
    `standard input. Exit status (every command): ${EXIT.ok} success, ${EXIT.error} bad usage or input, ${EXIT.finding}\n` +
    `something found (an object rejected, a case failed, a rule with a problem).\n`
  );
}

/** Runs the command line and returns the exit code. */
export async function main(argv: string[], io: CommandIO = processIO()): Promise<number> {
  const [name, ...rest] = argv;
  if (!name) {
    io.stderr(usage());
    return EXIT.error;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout(usage());
    return EXIT.ok;
  }
  const command = commands[name];
  if (!command) {
    io.stderr(`modrule: unknown command "${name}"\n\n${usage()}`);
    return EXIT.error;
  }
  try {
    return await (
      await command.load()
    )(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`modrule ${name}: ${err.message}\n`);
      return EXIT.error;
    }
    // A bug or an environment failure is trouble too, never "found something".
    io.stderr(`modrule ${name}: ${stackOf(err)}\n`);
    return EXIT.error;
  }
}

/**
 * Runs the command line as the process (bin/modrule, bin/modrule-post-renderer, `node dist/cli/main.js`): a reader
 * that closes the pipe early ends nothing (see dropOutputWhenClosed), and the command's status is the process's.
 */
export function runAsProcess(argv: string[]): void {
  dropOutputWhenClosed(process.stdout);
  dropOutputWhenClosed(process.stderr);
  void main(argv).then((code) => {
    process.exitCode = code;
  });
}

if (require.main === module) runAsProcess(process.argv.slice(2));
