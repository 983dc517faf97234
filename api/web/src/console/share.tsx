import { compare, divide, multiply } from '../lib/decimal';

/** allocatedShare ("0.625") as a percentage string ("62.5%"), exactly. */
export function percent(share: string): string {
  return `${divide(multiply(share, 100), '1', 1)}%`;
}

/** `part / whole` as a share ("0.6250"), "0" when the whole is zero. */
export function shareOf(part: string, whole: number): string {
  return whole > 0 && compare(part, '0') !== 0 ? divide(part, String(whole), 6) : '0';
}

/** A bar and the share as a percentage; the number says it, the bar repeats it. */
export function ShareBar({ share }: { share: string }) {
  const pct = Math.min(100, Math.max(0, Number(share) * 100));
  return (
    <span class="share">
      <span class="share-track" aria-hidden="true">
        <span class="share-fill" style={{ width: `${pct}%` }} />
      </span>
      {percent(share)}
    </span>
  );
}
