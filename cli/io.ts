import { readFile } from 'node:fs/promises';

/** What a subcommand may touch: injected so tests can run commands in-process. */
export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Reads all of standard input (for `--file -`). */
  readStdin: () => Promise<string>;
  /** Standard input is a terminal (nothing piped in); absent means not a terminal. */
  stdinIsTTY?: boolean;
  /** Standard output is a terminal (colour allowed); absent means not a terminal. */
  stdoutIsTTY?: boolean;
}

/** A subcommand: takes its own arguments, returns the process exit code. */
export type Command = (args: string[], io: CommandIO) => Promise<number>;

/** Thrown for bad usage or bad input; the CLI prints the message and exits 1. */
export class UsageError extends Error {}

/** The real process streams. */
export function processIO(): CommandIO {
  return {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    stdinIsTTY: Boolean(process.stdin.isTTY),
    stdoutIsTTY: Boolean(process.stdout.isTTY),
  };
}

/** Reads a file, or standard input when the path is `-`. */
export async function readInput(path: string, io: CommandIO): Promise<string> {
  if (path === '-') return io.readStdin();
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
}
