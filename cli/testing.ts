// Test helpers (excluded from the build): run a subcommand in-process with captured output; write a ModRule file.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { JsonObject } from '../util/json';
import { Command, CommandIO } from './io';

/** What a command returned and wrote. */
export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `command` with `args`; stdin is `stdin`, and the streams are terminals only when `tty` says so. */
export async function runCommand(
  command: Command,
  args: string[],
  options: { stdin?: string; tty?: boolean } = {},
): Promise<CommandResult> {
  let stdout = '';
  let stderr = '';
  const io: CommandIO = {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    readStdin: async () => options.stdin ?? '',
    stdinIsTTY: options.tty ?? false,
    stdoutIsTTY: options.tty ?? false,
  };
  const code = await command(args, io);
  return { code, stdout, stderr };
}

let rulesDir: string | undefined;

/** Writes a ModRule `name` with `spec` (no namespace) to a YAML file of its own in a temp folder; returns the path. */
export function writeRule(name: string, spec: JsonObject): string {
  rulesDir ??= mkdtempSync(join(tmpdir(), 'modrule-rules-'));
  const file = join(rulesDir, `${name}.yaml`);
  writeFileSync(
    file,
    stringify({ apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name }, spec }),
  );
  return file;
}
