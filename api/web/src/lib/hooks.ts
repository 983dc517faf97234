/** Data hooks over the GraphQL client: one query, a paginated connection, a mutation. */

import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, asApiError, request } from './api';
import type { Doc } from './doc';

export interface QueryState<R> {
  data: R | null;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `doc` with `variables` and again whenever they change (compared as JSON);
 * with `pollMs`, again every so often while the page is visible.
 */
export function useQuery<R, V>(doc: Doc<R, V>, variables: V, options: { pollMs?: number; skip?: boolean } = {}): QueryState<R> {
  const [data, setData] = useState<R | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(!options.skip);
  const [tick, setTick] = useState(0);
  const key = JSON.stringify(variables);
  useEffect(() => {
    if (options.skip) return;
    let live = true;
    setLoading(true);
    request(doc, JSON.parse(key) as V)
      .then((r) => live && (setData(r), setError(null)))
      .catch((e: unknown) => live && setError(asApiError(e)))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [doc, key, tick, options.skip]);
  usePolling(options.pollMs, () => setTick((n) => n + 1));
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data, error, loading, reload };
}

function usePolling(ms: number | undefined, fire: () => void): void {
  const fireRef = useRef(fire);
  fireRef.current = fire;
  useEffect(() => {
    if (!ms) return;
    const id = window.setInterval(() => {
      if (document.visibilityState === 'visible') fireRef.current();
    }, ms);
    return () => window.clearInterval(id);
  }, [ms]);
}

export interface Connection<T> {
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  nodes: T[];
}

export interface PagedState<T> {
  items: T[];
  error: ApiError | null;
  loading: boolean;
  hasMore: boolean;
  loadMore: () => void;
  reload: () => void;
  /** Replaces one item in place (after a mutation answered with its new state). */
  replace: (match: (item: T) => boolean, next: T) => void;
}

/**
 * A Relay-style connection read page by page: "Load more" asks for the page after
 * `pageInfo.endCursor` and appends it.
 */
export function usePaged<R, V extends { first?: number | null; after?: string | null }, T>(
  doc: Doc<R, V>,
  variables: V,
  select: (result: R) => Connection<T>,
): PagedState<T> {
  const [items, setItems] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const key = JSON.stringify(variables);
  const selectRef = useRef(select);
  selectRef.current = select;
  // Answers to an earlier generation (before a reload or new variables) are dropped.
  const generationRef = useRef(0);

  const fetchPage = useCallback(
    (after: string | null, append: boolean, gen: number) => {
      setLoading(true);
      request(doc, { ...(JSON.parse(key) as V), after })
        .then((r) => {
          if (gen !== generationRef.current) return;
          const page = selectRef.current(r);
          setItems((old) => (append ? [...old, ...page.nodes] : page.nodes));
          setCursor(page.pageInfo.endCursor);
          setHasMore(page.pageInfo.hasNextPage);
          setError(null);
        })
        .catch((e: unknown) => gen === generationRef.current && setError(asApiError(e)))
        .finally(() => gen === generationRef.current && setLoading(false));
    },
    [doc, key],
  );

  useEffect(() => {
    generationRef.current += 1;
    fetchPage(null, false, generationRef.current);
  }, [fetchPage, generation]);

  const loadMore = useCallback(() => fetchPage(cursor, true, generationRef.current), [fetchPage, cursor]);
  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  const replace = useCallback((m: (item: T) => boolean, next: T) => setItems((old) => old.map((i) => (m(i) ? next : i))), []);
  return { items, error, loading, hasMore, loadMore, reload, replace };
}

export interface MutationState<R, V> {
  run: (variables: V) => Promise<R | null>;
  pending: boolean;
  error: ApiError | null;
  reset: () => void;
}

/** A mutation: `run` resolves to its result, or to null after setting `error`. */
export function useMutation<R, V>(doc: Doc<R, V>): MutationState<R, V> {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = useCallback(
    async (variables: V) => {
      setPending(true);
      setError(null);
      try {
        return await request(doc, variables);
      } catch (e) {
        setError(asApiError(e));
        return null;
      } finally {
        setPending(false);
      }
    },
    [doc],
  );
  const reset = useCallback(() => setError(null), []);
  return { run, pending, error, reset };
}
