import { parseArgs, ParseArgsConfig } from 'node:util';
import { EXIT } from './exit';
import { CommandIO } from './io';

/** Parsed option values by name. */
export type ArgValues = Record<string, string | boolean | Array<string | boolean> | undefined>;

/**
 * Parses `modrule NAME PATH... [--output text|json] [-h] [options]`: the values (output is 'text' or 'json') and
 * paths, or the exit code to return (EXIT.ok after --help, EXIT.error after a message on stderr).
 */
export function parsePathArgs(
  name: string,
  usage: string,
  args: string[],
  io: CommandIO,
  options: NonNullable<ParseArgsConfig['options']>,
): { values: ArgValues; output: 'text' | 'json'; paths: string[] } | number {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        ...options,
        output: { type: 'string', short: 'o', default: 'text' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    io.stderr(`modrule ${name}: ${(err as Error).message}\n\n${usage}`);
    return EXIT.error;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout(usage);
    return EXIT.ok;
  }
  const output = values.output;
  if (output !== 'text' && output !== 'json') {
    io.stderr(`modrule ${name}: --output must be text or json, not "${String(output)}"\n`);
    return EXIT.error;
  }
  if (positionals.length === 0) {
    io.stderr(`modrule ${name}: give at least one PATH\n\n${usage}`);
    return EXIT.error;
  }
  return { values, output, paths: positionals };
}
