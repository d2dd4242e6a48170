import { CommandIO, UsageError } from './io';

/** modrule serve (not built yet). */
export async function run(_args: string[], _io: CommandIO): Promise<number> {
  throw new UsageError('serve is not implemented yet');
}
