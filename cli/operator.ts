import { CommandIO, UsageError } from './io';

/** modrule operator (not built yet). */
export async function run(_args: string[], _io: CommandIO): Promise<number> {
  throw new UsageError('operator is not implemented yet');
}
