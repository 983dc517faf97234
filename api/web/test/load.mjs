// Loads a dependency-free TypeScript module of src/ for node:test: transpiled with the
// TypeScript compiler (a dev dependency) into a temporary .mjs file and imported.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const WEB = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(tmpdir(), `neocloud-web-test-${process.pid}`);

export async function load(path) {
  const source = readFileSync(join(WEB, path), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, jsx: ts.JsxEmit.ReactJSX, jsxImportSource: 'preact' },
    fileName: path,
  });
  const target = join(OUT, path.replace(/\.tsx?$/, '.mjs'));
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, outputText);
  return import(pathToFileURL(target).href);
}
