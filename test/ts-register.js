// Lets `node -r ./test/ts-register.js cli/main.ts` run the CLI straight from its TypeScript sources (transpile
// only, as ts-jest's isolatedModules does), so tests can spawn the real command without `npm run build` first.
// Transpiled files are cached by content hash: loading the compiler for every spawned process is the slow part.
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { compilerOptions } = require('../tsconfig.json');

const cacheDir = path.join(os.tmpdir(), `modrule-ts-cache-${process.getuid ? process.getuid() : 'user'}`);
// A new compiler or new options make new cache entries.
const salt = `${require('typescript/package.json').version}\0${JSON.stringify(compilerOptions)}\0`;
let ts;
let options;

function transpile(source, filename) {
  if (!ts) {
    ts = require('typescript');
    options = ts.convertCompilerOptionsFromJson(
      { ...compilerOptions, sourceMap: false, inlineSourceMap: true, noEmit: false },
      __dirname,
    ).options;
  }
  return ts.transpileModule(source, { compilerOptions: options, fileName: filename }).outputText;
}

require.extensions['.ts'] = (module, filename) => {
  const source = fs.readFileSync(filename, 'utf8');
  const key = crypto
    .createHash('sha1')
    .update(salt)
    .update(filename)
    .update('\0')
    .update(source)
    .digest('hex');
  const cached = path.join(cacheDir, `${key}.js`);
  let output;
  try {
    output = fs.readFileSync(cached, 'utf8');
  } catch {
    output = transpile(source, filename);
    fs.mkdirSync(cacheDir, { recursive: true });
    // Write then rename: parallel test processes never read a half-written file.
    const tmp = `${cached}.${process.pid}`;
    fs.writeFileSync(tmp, output);
    fs.renameSync(tmp, cached);
  }
  module._compile(output, filename);
};
