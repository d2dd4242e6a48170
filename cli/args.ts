import { parseArgs, ParseArgsConfig } from 'node:util';
import { messageOf } from '../util/errors';
import { closest } from '../util/suggest';
import { UsageError } from './io';

// Every subcommand parses its options here, with one convention: bad usage throws UsageError, and main.ts turns it
// into `modrule NAME: message` on stderr and EXIT.error. --help is the caller's to print (it owns the text).

/** The options of one subcommand, as node:util's parseArgs takes them (-h/--help is added). */
export type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

type Config<O extends OptionSpecs> = {
  args: string[];
  options: O & typeof HELP;
  strict: true;
  allowPositionals: boolean;
};

/** Parsed option values by name. */
export type ArgValues = Record<string, string | boolean | Array<string | boolean> | undefined>;

/** What parseCommand returns: node:util's parsed values (typed by the options) and the positionals. */
export interface ParsedCommand<O extends OptionSpecs> {
  values: ReturnType<typeof parseArgs<Config<O>>>['values'];
  /** Empty unless the command takes positionals. */
  positionals: string[];
}

/** A subcommand's command line: its options, whether it takes positionals, and the usage an error ends with. */
export interface CommandLine<O extends OptionSpecs> {
  options: O;
  /** Paths, an expression, TYPE/NAME...; without, a positional is an error. */
  positionals?: boolean;
  usage: string;
}

/**
 * Parses a subcommand's arguments (strict: unknown options are errors): the values and positionals, or 'help' for
 * -h/--help; throws UsageError with the parser's message and the usage.
 */
export function parseCommand<O extends OptionSpecs>(
  args: string[],
  line: CommandLine<O>,
): ParsedCommand<O> | 'help' {
  let parsed: ParsedCommand<O>;
  try {
    parsed = parseArgs<Config<O>>({
      args,
      options: { ...line.options, ...HELP },
      strict: true,
      allowPositionals: line.positionals ?? false,
    });
  } catch (err) {
    throw new UsageError(unknownOption(err, line) ?? `${messageOf(err)}\n\n${line.usage}`);
  }
  return (parsed.values as { help?: boolean }).help ? 'help' : parsed;
}

/**
 * An unknown option as one line, with the option it is likely a misspelling of and where the options are listed
 * (`--rule` for `--rules`), instead of node's message and the whole usage; undefined for any other error.
 */
function unknownOption<O extends OptionSpecs>(err: unknown, line: CommandLine<O>): string | undefined {
  if ((err as { code?: string }).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return undefined;
  const option = /Unknown option '([^']+)'/.exec(messageOf(err))?.[1];
  if (!option) return undefined;
  const names = Object.keys({ ...line.options, ...HELP });
  const near = option.startsWith('--') ? closest(option.slice(2), names) : undefined;
  const command = /^usage: (modrule [\w-]+)/.exec(line.usage)?.[1] ?? 'modrule';
  return `unknown option '${option}'${near ? ` (did you mean --${near}?)` : ''}; "${command} --help" lists the options`;
}

/**
 * Parses `modrule NAME PATH... [--output text|json] [-h] [options]` (scope, test, validate): the values, output and
 * paths, or 'help'; throws UsageError.
 */
export function parsePathCommand(
  args: string[],
  usage: string,
  options: OptionSpecs,
): { values: ArgValues; output: 'text' | 'json'; paths: string[] } | 'help' {
  // These commands' usage errors have always ended with the usage itself, without the blank line the others
  // print after it: kept byte for byte.
  const tail = usage.replace(/\n$/, '');
  const parsed = parseCommand(args, {
    options: { ...options, output: { type: 'string', short: 'o', default: 'text' } },
    positionals: true,
    usage: tail,
  });
  if (parsed === 'help') return 'help';
  const { positionals } = parsed;
  const values = parsed.values as ArgValues;
  const output = values.output;
  if (output !== 'text' && output !== 'json')
    throw new UsageError(`--output must be text or json, not "${String(output)}"`);
  if (positionals.length === 0) throw new UsageError(`give at least one PATH\n\n${tail}`);
  return { values, output, paths: positionals };
}
