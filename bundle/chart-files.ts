import * as fs from 'node:fs';
import * as path from 'node:path';

// charts/modrule does not restate the manifests: its templates read bundle.yaml and parts of config/ from the
// chart's files/ folder. Those were symbolic links, which Helm follows with a note on stderr at every render (Helm 3:
// `walk.go: found symbolic link`, Helm 4: an INFO line), five lines before any output. So they are copies, written
// by `make bundle` (and `npm run bundle`) after bundle.yaml, and bundle/chart-files.test.ts fails when one differs
// from its source.

/** Where each source the chart reads goes in charts/modrule/files (paths from the repository root). */
export const CHART_FILE_SOURCES: ReadonlyArray<{ source: string; copy: string }> = [
  { source: 'bundle.yaml', copy: 'bundle.yaml' },
  ...['ca_injection.yaml', 'ca_injection_validating.yaml', 'certificate.yaml', 'external_cert.yaml'].map(
    (f) => ({
      source: `config/cert-manager/${f}`,
      copy: `cert-manager/${f}`,
    }),
  ),
  ...['alerts.yaml', 'dashboard.json'].map((f) => ({
    source: `config/monitoring/${f}`,
    copy: `monitoring/${f}`,
  })),
  ...['configmaps.yaml', 'owners.yaml', 'secrets.yaml'].map((f) => ({
    source: `config/rbac/references/${f}`,
    copy: `references/${f}`,
  })),
];

/** The chart's files/ folder under a repository root. */
export const chartFilesDir = (root: string): string => path.join(root, 'charts', 'modrule', 'files');

/** The copies that are missing, are links, or differ from their source (paths under files/). */
export function staleChartFiles(root: string): string[] {
  const dir = chartFilesDir(root);
  return CHART_FILE_SOURCES.filter(({ source, copy }) => {
    const file = path.join(dir, copy);
    if (linkOnTheWay(dir, copy) || !fs.existsSync(file)) return true;
    return !fs.readFileSync(file).equals(fs.readFileSync(path.join(root, source)));
  }).map((f) => f.copy);
}

// A link at the file itself or at a folder above it (files/cert-manager used to be one).
function linkOnTheWay(dir: string, copy: string): boolean {
  return pathsTo(dir, copy).some(isLink);
}

/** files/a, files/a/b, ... down to the copy. */
function pathsTo(dir: string, copy: string): string[] {
  const parts = copy.split('/');
  return parts.map((_, i) => path.join(dir, ...parts.slice(0, i + 1)));
}

function isLink(at: string): boolean {
  try {
    return fs.lstatSync(at).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Writes every stale copy (a link is replaced by a file); returns what it wrote. */
export function writeChartFiles(root: string): string[] {
  const dir = chartFilesDir(root);
  const stale = staleChartFiles(root);
  for (const copy of stale) {
    // Removing a link removes the link only, never what it points to.
    for (const at of pathsTo(dir, copy)) if (isLink(at)) fs.unlinkSync(at);
    const file = path.join(dir, copy);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const source = CHART_FILE_SOURCES.find((f) => f.copy === copy)!.source;
    fs.copyFileSync(path.join(root, source), file);
  }
  return stale;
}

// node dist/bundle/chart-files.js [ROOT]
if (require.main === module) {
  const root = process.argv[2] ?? '.';
  for (const copy of writeChartFiles(root))
    process.stdout.write(`wrote ${path.join(chartFilesDir(root), copy)}\n`);
}
