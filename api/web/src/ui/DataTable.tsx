import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { estimateHeight, INITIAL_ROWS, type RowRange, rowOffsets, sameRange, segments, VIRTUAL_THRESHOLD, visibleRange } from '../lib/virtual';
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
  /**
   * A list that grows with "Load more": above VIRTUAL_THRESHOLD rows only those near the
   * viewport are in the DOM (see lib/virtual); below it the table renders every row.
   */
  virtual?: boolean;
}

/** A table with a caption, a header row and an empty state; scrolls sideways when narrow. */
export function DataTable<T>(props: DataTableProps<T>) {
  if (props.rows.length === 0 && !props.loading) return <p class="empty">{props.empty}</p>;
  return props.virtual ? <WindowedTable {...props} /> : <PlainTable {...props} />;
}

function PlainTable<T>({ caption, hideCaption, columns, rows, rowKey, loading, compact }: DataTableProps<T>) {
  return (
    // A keyboard user can scroll a wide table sideways: the wrapper takes focus.
    <div class="table-wrap" role="region" aria-label={caption} tabIndex={0}>
      <table class={compact ? 'table table-compact' : 'table'} aria-busy={loading || undefined}>
        <Head caption={caption} hideCaption={hideCaption} columns={columns} />
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              <Cells columns={columns} row={row} />
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface HeadProps<T> {
  caption: string;
  hideCaption?: boolean;
  columns: Column<T>[];
  /** The header row's aria-rowindex (1) in a windowed table. */
  rowIndex?: number;
  /** Fixed column widths in px (a windowed table). */
  widths?: number[];
}

function Head<T>({ caption, hideCaption, columns, rowIndex, widths }: HeadProps<T>) {
  return (
    <>
      <caption class={hideCaption ? 'sr-only' : undefined}>{caption}</caption>
      {widths && (
        <colgroup>
          {widths.map((px, i) => (
            <col key={i} style={{ width: `${px}px` }} />
          ))}
        </colgroup>
      )}
      <thead>
        <tr aria-rowindex={rowIndex}>
          {columns.map((c) => (
            <th scope="col" class={c.numeric ? 'num' : undefined} key={c.header}>
              {c.hiddenHeader ? <span class="sr-only">{c.header}</span> : c.header}
            </th>
          ))}
        </tr>
      </thead>
    </>
  );
}

function Cells<T>({ columns, row }: { columns: Column<T>[]; row: T }) {
  return (
    <>
      {columns.map((c) => (
        <td class={c.numeric ? 'num' : undefined} key={c.header}>
          {c.cell(row)}
        </td>
      ))}
    </>
  );
}

const NO_OFFSETS = new Float64Array(1);

/**
 * DataTable with `virtual`: every row up to VIRTUAL_THRESHOLD, then only the rows near the
 * viewport (the page scrolls as before; the table keeps its full height with a spacer row
 * above and below what is rendered). It stays a <table>: aria-rowcount gives the number
 * of rows (the header row included) and each rendered row its aria-rowindex. The row that
 * holds the focus is kept rendered wherever it is scrolled to, and tabbing to a row
 * scrolls it into view, which renders the rows after it: Tab and Shift+Tab walk through
 * every row's links and buttons. Row heights are measured as rows render (a row not seen
 * yet counts as the mean of those seen); column widths are fixed when windowing starts so
 * that the columns do not shift as rows come and go.
 */
function WindowedTable<T>({ caption, hideCaption, columns, rows, rowKey, loading, compact }: DataTableProps<T>) {
  const windowed = rows.length > VIRTUAL_THRESHOLD;
  const wrapRef = useRef<HTMLDivElement>(null);
  const bodyRef = useRef<HTMLTableSectionElement>(null);
  /** Measured heights by row key. */
  const heights = useRef(new Map<string, number>());
  /** The key of the row that holds the focus. */
  const pinned = useRef<string | null>(null);
  const [range, setRange] = useState<RowRange>({ start: 0, end: INITIAL_ROWS });
  const [, setMeasured] = useState(0);
  /** Column widths in px, taken from the table laid out freely, for the headers and wrapper width `of`. */
  const [widths, setWidths] = useState<{ of: string; px: number[] } | null>(null);

  // rowKey is a fresh arrow on every render of the caller: the keys follow the rows.
  const keys = useMemo(() => (windowed ? rows.map(rowKey) : []), [rows, windowed]);
  const offsets = windowed ? rowOffsets(keys.length, (i) => heights.current.get(keys[i] ?? ''), estimateHeight(heights.current.values())) : NO_OFFSETS;
  const pinIndex = windowed && pinned.current !== null ? keys.indexOf(pinned.current) : -1;
  const parts = windowed ? segments(offsets, range, pinIndex >= 0 ? [pinIndex] : []) : [];
  const headers = columns.map((c) => c.header).join('\u0000');
  // Fixed widths apply once measured; the layout effect drops them when the headers or the
  // wrapper's width change, and measures again.
  const locked = windowed && widths !== null;

  // The latest layout, for the listeners below.
  const live = useRef({ windowed, offsets });
  live.current = { windowed, offsets };
  const ops = useMemo(
    () => ({
      /** Reads the heights of the rendered rows; true when one changed. */
      measure(): boolean {
        const body = bodyRef.current;
        if (!body || !live.current.windowed) return false;
        let changed = false;
        for (const tr of Array.from(body.querySelectorAll<HTMLTableRowElement>('tr[data-key]'))) {
          const key = tr.getAttribute('data-key')!;
          const h = tr.getBoundingClientRect().height;
          const old = heights.current.get(key);
          if (h > 0 && (old === undefined || Math.abs(old - h) > 0.5)) {
            heights.current.set(key, h);
            changed = true;
          }
        }
        return changed;
      },
      /** Renders the rows the viewport shows now (the state changes only when they change). */
      update(): void {
        const body = bodyRef.current;
        if (!body || !live.current.windowed) return;
        const next = visibleRange(live.current.offsets, -body.getBoundingClientRect().top, window.innerHeight);
        setRange((r) => (sameRange(r, next) ? r : next));
      },
    }),
    [],
  );

  // After each render: fix the column widths, measure the rows, then pick the rows to show.
  useLayoutEffect(() => {
    if (!windowed) return;
    const of = `${headers}@${wrapRef.current?.clientWidth ?? 0}`;
    if (widths === null || widths.of !== of) {
      if (widths !== null) {
        setWidths(null); // lay the table out freely once more, then measure it
        return;
      }
      const ths = Array.from(wrapRef.current?.querySelectorAll('thead th') ?? []);
      setWidths({ of, px: ths.map((th) => th.getBoundingClientRect().width) });
      return;
    }
    if (ops.measure()) setMeasured((n) => n + 1);
    else ops.update();
  });

  useEffect(() => {
    if (!windowed) return;
    const body = bodyRef.current;
    if (!body) return;
    // At most once a frame: measure what is rendered, then re-render (when a row's height
    // changed or the window was resized, which re-fixes the columns) or pick the rows.
    let frame = 0;
    let force = false;
    const refresh = () => {
      frame = 0;
      if (ops.measure() || force) {
        force = false;
        setMeasured((n) => n + 1);
      } else ops.update();
    };
    const schedule = () => {
      if (!frame) frame = requestAnimationFrame(refresh);
    };
    const onResize = () => {
      force = true;
      schedule();
    };
    // A row that grows or shrinks in place (an error shown, details opened) is measured again.
    const resized = new ResizeObserver(schedule);
    const onFocusIn = (e: FocusEvent) => {
      const tr = (e.target as Element | null)?.closest?.('tr[data-key]');
      pinned.current = tr ? tr.getAttribute('data-key') : null;
    };
    const onFocusOut = (e: FocusEvent) => {
      const to = e.relatedTarget as Node | null;
      if (!to || !body.contains(to)) pinned.current = null;
    };
    document.addEventListener('scroll', schedule, { capture: true, passive: true });
    window.addEventListener('resize', onResize);
    resized.observe(body);
    body.addEventListener('focusin', onFocusIn);
    body.addEventListener('focusout', onFocusOut);
    return () => {
      cancelAnimationFrame(frame);
      document.removeEventListener('scroll', schedule, { capture: true });
      window.removeEventListener('resize', onResize);
      resized.disconnect();
      body.removeEventListener('focusin', onFocusIn);
      body.removeEventListener('focusout', onFocusOut);
      pinned.current = null;
    };
  }, [windowed, ops]);

  const classes = ['table', compact && 'table-compact', windowed && 'table-windowed', locked && 'table-fixed'].filter(Boolean).join(' ');
  return (
    // A keyboard user can scroll a wide table sideways: the wrapper takes focus.
    <div class="table-wrap" role="region" aria-label={caption} tabIndex={0} ref={wrapRef}>
      <table class={classes} aria-busy={loading || undefined} aria-rowcount={windowed ? rows.length + 1 : undefined}>
        <Head caption={caption} hideCaption={hideCaption} columns={columns} rowIndex={windowed ? 1 : undefined} widths={locked ? widths!.px : undefined} />
        <tbody ref={bodyRef}>
          {windowed
            ? parts.map((part) =>
                'row' in part ? (
                  <tr key={keys[part.row]} data-key={keys[part.row]} aria-rowindex={part.row + 2}>
                    <Cells columns={columns} row={rows[part.row]!} />
                  </tr>
                ) : (
                  // Stands in for the rows not rendered; hidden from assistive technology.
                  <tr key={`gap-${part.from === 0 ? 'top' : part.to === rows.length ? 'bottom' : part.from}`} class="table-gap" aria-hidden="true">
                    <td colSpan={columns.length} style={{ height: `${part.gap}px` }} />
                  </tr>
                ),
              )
            : rows.map((row) => (
                <tr key={rowKey(row)}>
                  <Cells columns={columns} row={row} />
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
