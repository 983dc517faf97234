import type { ComponentChildren } from 'preact';

/** Label/value pairs (a <dl>), in a responsive grid. */
export function DescriptionList({ items }: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="dl">
      {items.map(([term, value]) => (
        <div class="dl-item" key={term}>
          <dt>{term}</dt>
          <dd>{value ?? '—'}</dd>
        </div>
      ))}
    </dl>
  );
}
