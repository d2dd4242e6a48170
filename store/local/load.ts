import { ManifestEntry, ManifestSyntaxError, parseManifestEntries } from '../../util/yaml';
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { JsonObject } from '../../util/json';
import { messageOf } from '../../util/errors';

/** Extensions read when walking a folder; a file named explicitly is read whatever its extension. */
const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml']);
/** Bounds for a local folder: a runaway symlink loop or a home directory must not hang the server. */
const MAX_FILES = 10_000;
const MAX_DEPTH = 32;

/** A file that could not be read or parsed, with where. */
export class ManifestError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
    this.name = 'ManifestError';
  }
}

/** Every manifest file under the given paths (files as given, folders recursively, sorted); throws ManifestError for a missing path. */
export async function listManifestFiles(paths: readonly string[]): Promise<string[]> {
  const out = new Set<string>();
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH) throw new ManifestError(dir, `folders nested deeper than ${MAX_DEPTH}`);
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.name.startsWith('.')) continue; // editor swap files, Kubernetes ..data links
      const full = join(dir, e.name);
      if (e.isDirectory()) await walk(full, depth + 1);
      else if ((e.isFile() || e.isSymbolicLink()) && MANIFEST_EXTENSIONS.has(extname(e.name).toLowerCase())) {
        out.add(full);
        if (out.size > MAX_FILES) throw new ManifestError(dir, `more than ${MAX_FILES} manifest files`);
      }
    }
  };
  for (const p of paths) {
    let s;
    try {
      s = await stat(p);
    } catch (err) {
      throw new ManifestError(p, `cannot read: ${messageOf(err)}`);
    }
    if (s.isDirectory()) {
      try {
        await walk(p, 0);
      } catch (err) {
        if (err instanceof ManifestError) throw err;
        throw new ManifestError(p, `cannot list: ${messageOf(err)}`);
      }
    } else out.add(p);
  }
  return [...out];
}

/** Parses a multi-document YAML (or JSON) file into objects, flattening `kind: List`; throws ManifestError. */
export function parseManifests(text: string, file: string): JsonObject[] {
  return parseManifestFile(text, file).map((e) => e.object);
}

/** parseManifests, with the keys each object's document gives twice; throws ManifestError. */
export function parseManifestFile(text: string, file: string): ManifestEntry[] {
  try {
    return parseManifestEntries(text);
  } catch (err) {
    if (err instanceof ManifestSyntaxError) throw new ManifestError(file, err.message);
    throw err;
  }
}

/** Reads and parses one file; throws ManifestError. */
export async function loadManifestFile(file: string): Promise<JsonObject[]> {
  return (await loadManifestEntries(file)).map((e) => e.object);
}

/** Reads and parses one file, with the keys each object's document gives twice; throws ManifestError. */
export async function loadManifestEntries(file: string): Promise<ManifestEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ManifestError(file, `cannot read: ${messageOf(err)}`);
  }
  try {
    return parseManifestFile(text, file);
  } catch (err) {
    if (err instanceof ManifestError) throw err;
    throw new ManifestError(file, messageOf(err));
  }
}

/** A stat-based fingerprint of the files: changes when any is added, removed, rewritten or swapped. */
export async function fingerprintFiles(files: readonly string[]): Promise<string> {
  const parts = await Promise.all(
    files.map(async (f) => {
      try {
        const s = await stat(f);
        return `${f}:${s.ino}:${s.size}:${s.mtimeMs}`;
      } catch {
        return `${f}:missing`;
      }
    }),
  );
  return parts.join('|');
}
