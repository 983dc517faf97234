// Loads a TypeScript module of src/ for node:test: transpiled with the TypeScript compiler
// (a dev dependency) into a temporary .mjs file and imported. The modules it imports from
// src/ (relative paths; type-only imports vanish) are transpiled alongside, so a pure
// helper may use lib/decimal; anything else (Preact, the browser) it must not import.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const WEB = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(tmpdir(), `neocloud-web-test-${process.pid}`);
const written = new Set();

/** Transpiles `path` (relative to api/web) and what it imports from src/; its .mjs path. */
function transpile(path) {
  const target = join(OUT, path.replace(/\.tsx?$/, '.mjs'));
  if (written.has(path)) return target;
  written.add(path);
  const source = readFileSync(join(WEB, path), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, jsx: ts.JsxEmit.ReactJSX, jsxImportSource: 'preact' },
    fileName: path,
  });
  const linked = outputText.replace(/(\bfrom\s*|\bimport\s*\(?\s*)(['"])(\.\.?\/[^'"]+)\2/g, (_, head, quote, spec) => {
    const base = posix.join(posix.dirname(path), spec);
    const file = ['.ts', '.tsx'].map((ext) => base + ext).find((f) => existsSync(join(WEB, f)));
    if (!file) throw new Error(`${path}: cannot resolve ${spec}`);
    transpile(file);
    return `${head}${quote}${spec}.mjs${quote}`;
  });
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, linked);
  return target;
}

export async function load(path) {
  return import(pathToFileURL(transpile(path)).href);
}
