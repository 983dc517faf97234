/** A random idempotency key (also outside secure contexts, where randomUUID is missing). */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The last 8 hex digits of a UUID, to tell rows apart at a glance (the first ones of
 * a UUIDv7 are its creation time, shared by everything made in the same minute).
 */
export function shortId(id: string): string {
  return id.replace(/-/g, '').slice(-8);
}
