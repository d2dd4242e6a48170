import {
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CHART_FILE_SOURCES, chartFilesDir, staleChartFiles, writeChartFiles } from './chart-files';

const ROOT = path.join(__dirname, '..');

/** Every file under a folder, as paths relative to it. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() || e.isSymbolicLink()
      ? e.isSymbolicLink() && !lstatSync(path.join(dir, e.name)).isDirectory()
        ? [`${prefix}${e.name}`]
        : filesUnder(path.join(dir, e.name), `${prefix}${e.name}/`)
      : [`${prefix}${e.name}`],
  );
}

describe('charts/modrule/files', () => {
  it('holds a real file equal to its source for everything the chart reads (make bundle writes them)', () => {
    expect(staleChartFiles(ROOT)).toEqual([]);
    expect(filesUnder(chartFilesDir(ROOT)).sort()).toEqual(CHART_FILE_SOURCES.map((f) => f.copy).sort());
  });

  it('names only files the templates read, and every one they read', () => {
    const templates = path.join(ROOT, 'charts', 'modrule', 'templates');
    const text = readdirSync(templates)
      .map((f) => readFileSync(path.join(templates, f), 'utf8'))
      .join('\n');
    const read = new Set(
      [...text.matchAll(/"files\/([\w./%-]+)"/g)].flatMap(([, f]) =>
        f.includes('%s') ? ['configmaps', 'owners', 'secrets'].map((n) => f.replace('%s', n)) : [f],
      ),
    );
    expect([...read].sort()).toEqual(CHART_FILE_SOURCES.map((f) => f.copy).sort());
  });
});

describe('writeChartFiles', () => {
  /** A repository root with the sources, and a chart folder with links and a stale copy as they were. */
  function oldLayout(): string {
    const root = mkdtempSync(path.join(tmpdir(), 'modrule-chart-files-'));
    for (const { source } of CHART_FILE_SOURCES) {
      mkdirSync(path.dirname(path.join(root, source)), { recursive: true });
      copyFileSync(path.join(ROOT, source), path.join(root, source));
    }
    const files = chartFilesDir(root);
    mkdirSync(path.join(files, 'monitoring'), { recursive: true });
    symlinkSync('../../../bundle.yaml', path.join(files, 'bundle.yaml'));
    symlinkSync('../../../config/cert-manager', path.join(files, 'cert-manager'));
    symlinkSync('../../../../config/monitoring/alerts.yaml', path.join(files, 'monitoring', 'alerts.yaml'));
    writeFileSync(path.join(files, 'monitoring', 'dashboard.json'), '{}');
    return root;
  }

  it('replaces links and stale copies by copies, leaving the sources as they were', () => {
    const root = oldLayout();
    expect(staleChartFiles(root)).toEqual(CHART_FILE_SOURCES.map((f) => f.copy));
    expect(writeChartFiles(root)).toEqual(CHART_FILE_SOURCES.map((f) => f.copy));
    expect(staleChartFiles(root)).toEqual([]);
    for (const { source, copy } of CHART_FILE_SOURCES) {
      expect(lstatSync(path.join(chartFilesDir(root), copy)).isSymbolicLink()).toBe(false);
      expect(readFileSync(path.join(root, source))).toEqual(readFileSync(path.join(ROOT, source)));
    }
    expect(readdirSync(path.join(root, 'config', 'cert-manager')).sort()).toEqual(
      readdirSync(path.join(ROOT, 'config', 'cert-manager'))
        .filter((f) => CHART_FILE_SOURCES.some((s) => s.source === `config/cert-manager/${f}`))
        .sort(),
    );
    expect(writeChartFiles(root)).toEqual([]);
  });
});
