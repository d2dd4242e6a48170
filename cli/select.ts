import { CommandIO, UsageError } from './io';

/** modrule select (not built yet). */
export async function run(_args: string[], _io: CommandIO): Promise<number> {
  throw new UsageError('select is not implemented yet');
}
