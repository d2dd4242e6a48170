import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { archOf } from './arch';
import { ElfError, readElf } from './elf';

const ROOT = join(__dirname, '..');
const here = archOf(process.arch);

describe('readElf', () => {
  it("reads the re2 addon's machine and the libraries it loads", () => {
    const re2 = readElf(join(ROOT, 'node_modules/re2/build/Release/re2.node'));
    expect(re2.machine).toBe(here.elfMachine);
    expect(re2.interpreter).toBeUndefined();
    expect(re2.needed).toEqual(expect.arrayContaining(['libstdc++.so.6', 'libc.so.6']));
  });

  it("reads the Node executable's loader", () => {
    const node = readElf(process.execPath);
    expect(node.machine).toBe(here.elfMachine);
    expect(node.interpreter).toMatch(/^\/lib(64)?\/ld-linux-[a-z0-9-]+\.so\.\d$/);
    expect(node.needed).toContain('libc.so.6');
  });

  it('refuses what is not a 64-bit little-endian ELF file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'modrule-elf-'));
    writeFileSync(join(dir, 'text'), '#!/bin/sh\necho not a binary\n');
    expect(() => readElf(join(dir, 'text'))).toThrow(new ElfError(`${join(dir, 'text')} is not an ELF file`));
    const elf32 = Buffer.alloc(64);
    elf32.writeUInt32BE(0x7f454c46, 0);
    elf32[4] = 1; // ELFCLASS32
    elf32[5] = 1;
    writeFileSync(join(dir, 'elf32'), elf32);
    expect(() => readElf(join(dir, 'elf32'))).toThrow(/not a 64-bit little-endian ELF file/);
  });
});
