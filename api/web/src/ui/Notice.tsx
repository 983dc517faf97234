import type { ComponentChildren } from 'preact';
import type { ApiError } from '../lib/api';

type Tone = 'info' | 'success' | 'warning' | 'danger';

/** A message box; `danger` and `warning` are announced at once. */
export function Notice({ tone = 'info', title, children }: { tone?: Tone; title?: string; children?: ComponentChildren }) {
  const role = tone === 'danger' ? 'alert' : 'status';
  return (
    <div class={`notice notice-${tone}`} role={role}>
      {title && <p class="notice-title">{title}</p>}
      {children && <div class="notice-body">{children}</div>}
    </div>
  );
}

const TITLES: Record<string, string> = {
  INVALID_INPUT: 'Please check the form',
  FORBIDDEN: 'Not allowed',
  NOT_FOUND: 'Not found',
  INVALID_STATE: 'That cannot be done now',
  RATE_LIMITED: 'Too many requests',
  INSUFFICIENT_CAPACITY: 'Not enough free capacity',
  QUOTA_EXCEEDED: 'Over your quota',
  BUDGET_EXCEEDED: 'Over your budget',
  IDEMPOTENCY_CONFLICT: 'Already used for something else',
  UNAVAILABLE: 'Not available here',
  NETWORK: 'Connection problem',
};

/** An API error, with a title after its code. `skipField`: its field shows it instead. */
export function ErrorNotice({ error, onRetry }: { error: ApiError | null | undefined; onRetry?: () => void }) {
  if (!error) return null;
  return (
    <Notice tone="danger" title={TITLES[error.code] ?? 'Something went wrong'}>
      <p>{error.message}</p>
      {onRetry && (
        <button type="button" class="btn btn-secondary btn-small" onClick={onRetry}>
          Try again
        </button>
      )}
    </Notice>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}
