import { CommandIO, UsageError } from './io';

/** modrule apply (not built yet). */
export async function run(_args: string[], _io: CommandIO): Promise<number> {
  throw new UsageError('apply is not implemented yet');
}
