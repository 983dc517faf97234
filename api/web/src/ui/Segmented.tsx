/** A small choice of one among a few (a time range, a dimension): toggle buttons in a row. */
export function Segmented<T extends string | number>({ label, options, value, onChange }: { label: string; options: readonly { value: T; label: string }[]; value: T; onChange: (value: T) => void }) {
  return (
    <div class="segmented segmented-inline" role="group" aria-label={label}>
      {options.map((o) => (
        <button key={o.value} type="button" class="segment" aria-pressed={o.value === value} onClick={() => onChange(o.value)}>
          {o.label}
        </button>
      ))}
    </div>
  );
}
