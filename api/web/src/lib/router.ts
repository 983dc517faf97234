/**
 * History-API routing under one base path (`/portal` or `/console`): the server serves
 * the same HTML for every sub-path, and the app picks the page from the path.
 */

import { useEffect, useState } from 'preact/hooks';

let base = '';
const listeners = new Set<() => void>();

export function setBase(path: string): void {
  base = path.replace(/\/$/, '');
}

/** The path under the base: "/allocations/42" for /portal/allocations/42. */
export function currentPath(): string {
  const path = window.location.pathname;
  const rest = path.startsWith(base) ? path.slice(base.length) : path;
  return rest === '' ? '/' : rest;
}

export function currentQuery(): URLSearchParams {
  return new URLSearchParams(window.location.search);
}

/** The full URL of an in-app path. */
export function href(path: string): string {
  return `${base}${path === '/' ? '' : path}` || '/';
}

export function navigate(path: string, options: { replace?: boolean } = {}): void {
  const url = href(path);
  if (options.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  notify();
}

function notify(): void {
  for (const listener of listeners) listener();
}

window.addEventListener('popstate', notify);

/** Re-renders on every navigation; returns the in-app path and query. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  return { path: currentPath(), query: currentQuery() };
}

export interface Route<P> {
  /** "/allocations/:id": `:name` matches one path segment. */
  pattern: string;
  page: P;
}

/** The first route whose pattern matches `path`, with its parameters. */
export function match<P>(routes: readonly Route<P>[], path: string): { page: P; params: Record<string, string> } | null {
  const parts = split(path);
  for (const route of routes) {
    const params = matchParts(split(route.pattern), parts);
    if (params) return { page: route.page, params };
  }
  return null;
}

function split(path: string): string[] {
  return path.split('/').filter((p) => p !== '');
}

function matchParts(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (const [i, seg] of pattern.entries()) {
    const part = parts[i] ?? '';
    if (seg.startsWith(':')) params[seg.slice(1)] = decodeURIComponent(part);
    else if (seg !== part) return null;
  }
  return params;
}
