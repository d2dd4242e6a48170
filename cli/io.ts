import { readFile } from 'node:fs/promises';
import { excerpt } from '../util/excerpt';
import { ManifestSyntaxError } from '../util/yaml';
import { messageOf } from '../util/errors';

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

/** Thrown for bad usage or bad input; the CLI prints the message and exits 2 (EXIT.error). */
export class UsageError extends Error {}

/** The path that means standard input, wherever a subcommand takes a file. */
export const STDIN = '-';

/** A path as messages name it: `<stdin>` for `-`. */
export function displayName(path: string): string {
  return path === STDIN ? '<stdin>' : path;
}

/**
 * The input a subcommand reads when it takes one stream of objects (apply, select): the file given, else standard
 * input when something is piped in; a terminal with no file given is bad usage.
 */
export function fileOrStdin(file: string | undefined, io: CommandIO, flag = '--file'): string {
  if (file !== undefined) return file;
  if (io.stdinIsTTY) throw new UsageError(`give ${flag} FILE, or pipe the input in (or ${flag} -)`);
  return STDIN;
}

// Standard input can be read once per run; a second `-` would silently read nothing.
const stdinRead = new WeakSet<CommandIO>();

/** The real process streams. */
export function processIO(): CommandIO {
  return {
    // A stream closed by its reader is destroyed: later output goes nowhere (see dropOutputWhenClosed).
    stdout: (t) => void (process.stdout.destroyed || process.stdout.write(t)),
    stderr: (t) => void (process.stderr.destroyed || process.stderr.write(t)),
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    stdinIsTTY: Boolean(process.stdin.isTTY),
    stdoutIsTTY: Boolean(process.stdout.isTTY),
  };
}

/**
 * `modrule apply ... | head -1`: the reader went away. Node ignores SIGPIPE, so a write to the closed pipe fails with
 * EPIPE, which would end the process with a stack trace and status 1. A reader that stops reading is not an error of
 * the command: the rest of its output is dropped, quietly, and it ends with its own status (so a junit report is
 * still written, and `set -o pipefail` sees 0 or 2 as without the pipe).
 */
export function dropOutputWhenClosed(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
  });
}

/** Reads a file, or standard input when the path is `-` (once per run: a second `-` is bad usage). */
export async function readInput(path: string, io: CommandIO): Promise<string> {
  if (path === STDIN) {
    if (stdinRead.has(io))
      throw new UsageError('standard input ("-") is given twice: only one file can be read from it');
    stdinRead.add(io);
    return io.readStdin();
  }
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${messageOf(err)}`);
  }
}

/**
 * A YAML error as `file:line:column: document N: reason` and the offending line with a caret (the prefix and the
 * caret from the same position), or `file: document N: reason` when the error has no position.
 */
export function yamlErrorText(file: string, text: string, err: ManifestSyntaxError): string {
  const { document, position } = err.details;
  const name = displayName(file);
  if (!position) return `${name}: ${err.message}`;
  const doc = document === undefined ? '' : ` document ${document}:`;
  return `${name}:${position.line}:${position.column}:${doc} ${err.reason}\n${excerpt(text, position).replace(/\n$/, '')}`;
}
