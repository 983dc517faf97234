import type { ComponentChildren } from 'preact';
import { Button } from './Button';

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  /** Right-aligned, tabular digits (amounts, counts). */
  numeric?: boolean;
  /** Screen-reader-only header (for an actions column). */
  hiddenHeader?: boolean;
}

interface DataTableProps<T> {
  caption: string;
  /** Show the caption only to screen readers (the page heading says it already). */
  hideCaption?: boolean;
  columns: Column<T>[];
  rows: readonly T[];
  rowKey: (row: T) => string;
  empty: ComponentChildren;
  loading?: boolean;
  /** No minimum width: a narrow table (two or three short columns) beside another. */
  compact?: boolean;
}

/** A table with a caption, a header row and an empty state; scrolls sideways when narrow. */
export function DataTable<T>({ caption, hideCaption, columns, rows, rowKey, empty, loading, compact }: DataTableProps<T>) {
  if (rows.length === 0 && !loading) return <p class="empty">{empty}</p>;
  return (
    // A keyboard user can scroll a wide table sideways: the wrapper takes focus.
    <div class="table-wrap" role="region" aria-label={caption} tabIndex={0}>
      <table class={compact ? 'table table-compact' : 'table'} aria-busy={loading || undefined}>
        <caption class={hideCaption ? 'sr-only' : undefined}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.numeric ? 'num' : undefined} key={c.header}>
                {c.hiddenHeader ? <span class="sr-only">{c.header}</span> : c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((c) => (
                <td class={c.numeric ? 'num' : undefined} key={c.header}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** "Load more": asks for the page after `pageInfo.endCursor`. */
export function LoadMore({ hasMore, loading, onLoadMore, count }: { hasMore: boolean; loading: boolean; onLoadMore: () => void; count: number }) {
  return (
    <div class="load-more">
      <span class="muted" aria-live="polite">
        {count} shown{hasMore ? '' : ', all loaded'}
      </span>
      {hasMore && (
        <Button onClick={onLoadMore} pending={loading}>
          Load more
        </Button>
      )}
    </div>
  );
}
