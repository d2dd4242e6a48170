// Test helper (excluded from the build): runs a subcommand in-process with captured output.
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
