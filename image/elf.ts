import { closeSync, openSync, readSync } from 'node:fs';
import { messageOf } from '../util/errors';

// Just enough of ELF to check what a binary runs on and what it loads: 64-bit little-endian files (x86-64, AArch64).

/** What the image build needs to know about one ELF file. */
export interface ElfInfo {
  machine: number;
  /** PT_INTERP: the dynamic loader an executable asks for. */
  interpreter?: string;
  /** DT_NEEDED: the shared libraries it loads, by soname. */
  needed: string[];
}

/** A file that is not an ELF file this reader handles. */
export class ElfError extends Error {}

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const PT_INTERP = 3;
const DT_NEEDED = 1n;
const DT_STRTAB = 5n;

function readAt(fd: number, offset: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const got = readSync(fd, buf, 0, length, offset);
  if (got !== length) throw new ElfError(`truncated at offset ${offset}`);
  return buf;
}

interface Segment {
  type: number;
  offset: number;
  vaddr: number;
  filesz: number;
}

function segments(fd: number, header: Buffer): Segment[] {
  const phoff = Number(header.readBigUInt64LE(0x20));
  const phentsize = header.readUInt16LE(0x36);
  const phnum = header.readUInt16LE(0x38);
  const table = readAt(fd, phoff, phentsize * phnum);
  return Array.from({ length: phnum }, (_, i) => {
    const at = i * phentsize;
    return {
      type: table.readUInt32LE(at),
      offset: Number(table.readBigUInt64LE(at + 8)),
      vaddr: Number(table.readBigUInt64LE(at + 16)),
      filesz: Number(table.readBigUInt64LE(at + 32)),
    };
  });
}

function cString(buf: Buffer, at: number): string {
  const end = buf.indexOf(0, at);
  return buf.toString('latin1', at, end < 0 ? buf.length : end);
}

/** Reads the ELF header, loader and needed libraries of `file`; throws ElfError for anything else. */
export function readElf(file: string): ElfInfo {
  const fd = openSync(file, 'r');
  try {
    const header = Buffer.alloc(64);
    const got = readSync(fd, header, 0, 64, 0);
    if (got < 64 || header.readUInt32BE(0) !== 0x7f454c46) throw new ElfError(`${file} is not an ELF file`);
    if (header[4] !== 2 || header[5] !== 1)
      throw new ElfError(`${file} is not a 64-bit little-endian ELF file`);
    const machine = header.readUInt16LE(0x12);
    const segs = segments(fd, header);
    const interp = segs.find((s) => s.type === PT_INTERP);
    const interpreter = interp ? cString(readAt(fd, interp.offset, interp.filesz), 0) : undefined;
    const dynamic = segs.find((s) => s.type === PT_DYNAMIC);
    if (!dynamic) return { machine, interpreter, needed: [] };
    const table = readAt(fd, dynamic.offset, dynamic.filesz);
    const neededAt: number[] = [];
    let strtab: number | undefined;
    for (let at = 0; at + 16 <= table.length; at += 16) {
      const tag = table.readBigInt64LE(at);
      if (tag === 0n) break;
      const value = Number(table.readBigUInt64LE(at + 8));
      if (tag === DT_NEEDED) neededAt.push(value);
      else if (tag === DT_STRTAB) strtab = value;
    }
    if (neededAt.length === 0) return { machine, interpreter, needed: [] };
    // DT_STRTAB is an address: find the file offset of the loaded segment that holds it.
    const load = segs.find(
      (s) => s.type === PT_LOAD && strtab !== undefined && strtab >= s.vaddr && strtab < s.vaddr + s.filesz,
    );
    if (!load || strtab === undefined)
      throw new ElfError(`${file}: its string table is in no loaded segment`);
    const base = strtab - load.vaddr + load.offset;
    const longest = Math.max(...neededAt) + 256;
    const strings = readAt(fd, base, Math.min(longest, load.offset + load.filesz - base));
    return { machine, interpreter, needed: neededAt.map((at) => cString(strings, at)) };
  } catch (err) {
    if (err instanceof ElfError) throw err;
    throw new ElfError(`${file}: ${messageOf(err)}`);
  } finally {
    closeSync(fd);
  }
}
