import type { ComponentChildren } from 'preact';

/** A headline number with its label. */
export function Stat({ label, value, note }: { label: string; value: ComponentChildren; note?: ComponentChildren }) {
  return (
    <div class="stat">
      <p class="stat-label">{label}</p>
      <p class="stat-value">{value}</p>
      {note && <p class="stat-note">{note}</p>}
    </div>
  );
}
